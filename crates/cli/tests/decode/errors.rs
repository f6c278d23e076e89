//! `krec decode` on malformed, truncated and hostile input: every record before
//! the bad spot is printed, then one message naming file, byte and offset, and
//! a non-zero exit. Never a panic, never an allocation sized by the input.

use std::path::{Path, PathBuf};

use crate::support::decode::{
    batch_spans, data_dir, krec, parse_krec_json, read_expected, stderr_text, ExpectedRecord,
};
use krec_batch::DecodeConfig;
use krec_cli::decode::{decode_bytes, DecodeFailure};
use krec_cli::format::{OutputFormat, RecordContext, RecordWriter};
use proptest::prelude::*;

const MULTI: &str = "kafka-python-v2-multi";

fn multi() -> (Vec<u8>, Vec<ExpectedRecord>) {
    let data = std::fs::read(data_dir().join(format!("{MULTI}.bin"))).expect("fixture");
    let expected = read_expected(&data_dir().join(format!("{MULTI}.expected.jsonl")));
    assert_eq!(
        batch_spans(&data).len(),
        5,
        "the multi fixture holds five batches"
    );
    (data, expected)
}

/// Records of the expected list that live in the first `batches` batches.
fn records_before(expected: &[ExpectedRecord], data: &[u8], batches: usize) -> Vec<ExpectedRecord> {
    let spans = batch_spans(data);
    if batches == spans.len() {
        return expected.to_vec();
    }
    let first_excluded = base_offset(data, spans[batches].start);
    expected
        .iter()
        .filter(|r| r.offset < first_excluded)
        .cloned()
        .collect()
}

fn base_offset(data: &[u8], at: usize) -> i64 {
    krec_batch::EntryHeader::peek_base_offset(&data[at..]).expect("8 bytes")
}

fn write_temp(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, data).expect("write temp file");
    path
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Asserts exit code 1, the exact message prefix, and the records printed before it.
fn assert_fails_at(
    args: &[&str],
    file: &Path,
    position: usize,
    offset: &str,
    reason_part: &str,
    records: &[ExpectedRecord],
) {
    let output = krec(args);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{args:?}: {}",
        stderr_text(&output)
    );
    let stderr = stderr_text(&output);
    let prefix = format!(
        "krec decode: {}: byte {position}: offset {offset}: ",
        file.display()
    );
    assert!(
        stderr.starts_with(&prefix),
        "{args:?}: stderr {stderr:?}, wanted prefix {prefix:?}"
    );
    assert!(
        stderr.contains(reason_part),
        "{args:?}: stderr {stderr:?} lacks {reason_part:?}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert_eq!(parse_krec_json(&output.stdout), records, "{args:?}");
}

#[test]
fn a_checksum_error_prints_the_records_before_it_then_names_byte_and_offset() {
    let (mut data, expected) = multi();
    let spans = batch_spans(&data);
    let bad = spans[2].clone();
    data[bad.end - 1] ^= 0x01;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_temp(&dir, "corrupt.log", &data);
    assert_fails_at(
        &["decode", path_str(&file)],
        &file,
        bad.start,
        &base_offset(&data, bad.start).to_string(),
        "checksum",
        &records_before(&expected, &data, 2),
    );
}

#[test]
fn no_crc_reads_past_a_changed_byte_and_the_default_refuses_it() {
    let (mut data, expected) = multi();
    let first = batch_spans(&data)[0].clone();
    let at = first.start
        + data[first.clone()]
            .windows(5)
            .position(|w| w == b"lorem")
            .expect("batch 0 is uncompressed text");
    data[at] = b'L';
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_temp(&dir, "flipped.log", &data);

    assert_fails_at(&["decode", path_str(&file)], &file, 0, "0", "checksum", &[]);

    let output = krec(&["decode", "--no-crc", path_str(&file)]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let got = parse_krec_json(&output.stdout);
    assert_eq!(got.len(), expected.len());
    let changed: Vec<usize> = (0..got.len()).filter(|&i| got[i] != expected[i]).collect();
    assert_eq!(changed, vec![0], "only the first record differs");
    assert!(got[0]
        .value
        .as_deref()
        .is_some_and(|v| v.starts_with(b"Lorem")));
}

#[test]
fn a_file_cut_inside_a_batch_is_truncation_after_the_whole_batches() {
    let (data, expected) = multi();
    let spans = batch_spans(&data);
    let dir = tempfile::tempdir().expect("temp dir");
    for (index, span) in spans.iter().enumerate() {
        let mid = span.start + span.len() / 2;
        for cut in [
            span.start + 1,
            span.start + 11,
            span.start + 12,
            mid,
            span.end - 1,
        ] {
            let file = write_temp(&dir, &format!("cut-{cut}.log"), &data[..cut]);
            let offset = if cut - span.start >= 8 {
                base_offset(&data, span.start).to_string()
            } else {
                "unknown".to_owned()
            };
            assert_fails_at(
                &["decode", path_str(&file)],
                &file,
                span.start,
                &offset,
                "truncated",
                &records_before(&expected, &data, index),
            );
        }
        let whole = write_temp(&dir, &format!("whole-{index}.log"), &data[..span.end]);
        let output = krec(&["decode", path_str(&whole)]);
        assert!(
            output.status.success(),
            "cut at a boundary is fine: {}",
            stderr_text(&output)
        );
        assert_eq!(
            parse_krec_json(&output.stdout),
            records_before(&expected, &data, index + 1)
        );
    }
}

#[test]
fn hostile_lengths_are_refused_without_allocating_them() {
    let (data, expected) = multi();
    let spans = batch_spans(&data);
    let dir = tempfile::tempdir().expect("temp dir");
    let second = spans[1].start;
    let cases: [(i32, &str); 3] = [
        (i32::MAX, "over the limit"),
        (-1, "below the minimum"),
        (0, "below the minimum"),
    ];
    for (length, reason) in cases {
        let mut hostile = data.clone();
        hostile[second + 8..second + 12].copy_from_slice(&length.to_be_bytes());
        let file = write_temp(&dir, &format!("len{length}.log"), &hostile);
        assert_fails_at(
            &["decode", path_str(&file)],
            &file,
            second,
            &base_offset(&data, second).to_string(),
            reason,
            &records_before(&expected, &data, 1),
        );
    }

    let file = data_dir().join(format!("{MULTI}.bin"));
    let smallest = spans.iter().map(|s| s.len()).min().expect("spans");
    let limit = smallest.to_string();
    let too_big = spans
        .iter()
        .position(|s| s.len() > smallest)
        .expect("sizes differ");
    assert_fails_at(
        &["decode", "--max-batch-bytes", &limit, path_str(&file)],
        &file,
        spans[too_big].start,
        &base_offset(&data, spans[too_big].start).to_string(),
        "over the limit",
        &records_before(&expected, &data, too_big),
    );
}

#[test]
fn decompression_is_bounded_by_max_decompressed_bytes() {
    let (data, expected) = multi();
    let spans = batch_spans(&data);
    // Batch 1 is gzip: its records take a few hundred bytes once inflated.
    let file = data_dir().join(format!("{MULTI}.bin"));
    assert_fails_at(
        &["decode", "--max-decompressed-bytes", "64", path_str(&file)],
        &file,
        spans[1].start,
        &base_offset(&data, spans[1].start).to_string(),
        "limit",
        &records_before(&expected, &data, 1),
    );
}

#[test]
fn a_bad_second_file_still_prints_every_record_of_the_first() {
    let (data, expected) = multi();
    let dir = tempfile::tempdir().expect("temp dir");
    let good = write_temp(&dir, "good.log", &data);
    let bad = write_temp(&dir, "bad.log", &[0xff; 40]);
    let output = krec(&["decode", path_str(&good), path_str(&bad)]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(parse_krec_json(&output.stdout), expected);
    let stderr = stderr_text(&output);
    assert!(
        stderr.starts_with(&format!(
            "krec decode: {}: byte 0: offset -1: ",
            bad.display()
        )),
        "{stderr}"
    );
}

#[test]
fn unreadable_oversized_and_misformatted_inputs() {
    let missing = krec(&["decode", "/nonexistent/krec-test.log"]);
    assert_eq!(missing.status.code(), Some(1));
    let stderr = stderr_text(&missing);
    assert!(stderr.contains("/nonexistent/krec-test.log"), "{stderr}");
    assert!(missing.stdout.is_empty());

    let file = data_dir().join(format!("{MULTI}.bin"));
    let size = std::fs::metadata(&file).expect("fixture").len();
    let limit = (size - 1).to_string();
    let oversized = krec(&["decode", "--max-file-bytes", &limit, path_str(&file)]);
    assert_eq!(oversized.status.code(), Some(1));
    let stderr = stderr_text(&oversized);
    assert!(
        stderr.contains(&format!("{size} bytes, over the limit of {limit}")),
        "{stderr}"
    );
    assert!(oversized.stdout.is_empty());

    let exact = krec(&[
        "decode",
        "--max-file-bytes",
        &size.to_string(),
        path_str(&file),
    ]);
    assert!(exact.status.success(), "{}", stderr_text(&exact));

    let misformatted = krec(&["decode", "-f", "%o %q", path_str(&file)]);
    assert_eq!(misformatted.status.code(), Some(2));
    assert!(stderr_text(&misformatted).contains("unknown token `%q`"));
    assert!(misformatted.stdout.is_empty());
}

/// Decodes in-process into a Vec, returning the output and how it ended.
fn decode_in_process(data: &[u8], config: &DecodeConfig) -> (Vec<u8>, Result<(), DecodeFailure>) {
    let mut writer = RecordWriter::new(Vec::new(), OutputFormat::Json);
    let result = decode_bytes(data, config, &RecordContext::unknown(), &mut writer).map(|_| ());
    (writer.into_inner().expect("Vec never fails"), result)
}

#[test]
fn every_prefix_prints_exactly_the_whole_batches_it_holds() {
    let (data, expected) = multi();
    let spans = batch_spans(&data);
    let config = DecodeConfig::default();
    for cut in 0..=data.len() {
        let (out, result) = decode_in_process(&data[..cut], &config);
        let whole = spans.iter().filter(|s| s.end <= cut).count();
        assert_eq!(
            parse_krec_json(&out),
            records_before(&expected, &data, whole),
            "cut {cut}"
        );
        let at_boundary = cut == 0 || spans.iter().any(|s| s.end == cut);
        match result {
            Ok(()) => assert!(at_boundary, "cut {cut} should be truncation"),
            Err(DecodeFailure::Input {
                error: krec_batch::Error::Truncated { position, .. },
                position: reported,
            }) => {
                assert!(!at_boundary, "cut {cut} is whole batches");
                assert_eq!(position, spans[whole].start, "cut {cut}");
                assert_eq!(reported, position, "cut {cut}");
            }
            Err(other) => panic!("cut {cut}: {other:?}"),
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let config = DecodeConfig { max_batch_bytes: 1 << 16, ..DecodeConfig::default() };
        let (out, _) = decode_in_process(&bytes, &config);
        // Whatever came out is well-formed JSON lines.
        parse_krec_json(&out);
    }

    #[test]
    fn one_changed_checked_byte_leaves_the_batches_before_it_intact(
        index in 0usize..1378,
        flip in 1u8..=255,
    ) {
        let (mut data, expected) = multi();
        let spans = batch_spans(&data);
        let index = index % data.len();
        let batch = spans.iter().position(|s| s.contains(&index)).expect("in a batch");
        // Base offset, length and leader epoch precede the CRC'd part of a v2
        // batch: a change there is not detectable by design.
        prop_assume!(index - spans[batch].start >= 16);
        data[index] ^= flip;
        let (out, result) = decode_in_process(&data, &DecodeConfig::default());
        prop_assert!(result.is_err(), "a changed checked byte is caught");
        let want = records_before(&expected, &multi().0, batch);
        prop_assert_eq!(parse_krec_json(&out), want);
    }
}
