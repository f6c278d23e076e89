//! `krec decode --threads N`: output byte-identical to `--threads 1` on every fixture and
//! on a large encoder-built segment, and the same error behaviour (records before the bad
//! spot, then the one message naming file, byte and offset, exit 1) whatever the thread count.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::decode::{
    batch_spans, fixtures, krec, mixed_segment, parse_krec_json, stderr_text,
};
use krec_batch::DecodeConfig;
use krec_cli::decode::{
    decode_bytes, decode_bytes_parallel, DecodeFailure, Parallelism, DEFAULT_RUN_BYTES,
};
use krec_cli::format::{FormatArgs, RecordContext};

const PRODUCER: i64 = 77;

/// A segment's batch count and records per batch.
#[derive(Clone, Copy, Debug)]
struct Shape {
    batches: usize,
    records_per_batch: usize,
}

/// Batches of a few KiB: many to a run.
const SMALL_BATCHES: Shape = Shape {
    batches: 2000,
    records_per_batch: 25,
};

/// A first batch over 16 KiB, then smaller compressed ones: few batches to a run.
const LARGE_BATCHES: Shape = Shape {
    batches: 200,
    records_per_batch: 300,
};

const SHAPES: [Shape; 2] = [SMALL_BATCHES, LARGE_BATCHES];

/// A segment with a committed transaction marker every 100 batches; over 2 MiB, so the
/// default 1 MiB runs split it several ways.
fn segment(shape: Shape) -> Vec<u8> {
    let data = mixed_segment(shape.batches, shape.records_per_batch, 100, PRODUCER);
    let first = batch_spans(&data)[0].clone();
    let first_is_large = first.end - first.start >= 16 << 10;
    assert_eq!(
        first_is_large,
        shape.records_per_batch == LARGE_BATCHES.records_per_batch,
        "{shape:?}: first batch of {} bytes",
        first.end - first.start
    );
    data
}

fn data_records(shape: Shape) -> usize {
    (shape.batches - shape.batches / 100) * shape.records_per_batch
}

fn write_temp(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, data).expect("write temp file");
    path
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// `krec decode` of one file with the given thread options and format options.
fn decode(file: &Path, thread_args: &[&str], format_args: &[&str]) -> Output {
    let mut args = vec!["decode"];
    args.extend_from_slice(thread_args);
    args.extend_from_slice(format_args);
    args.push(path_str(file));
    krec(&args)
}

/// Thread settings compared with `--threads 1`: the default run size, and one batch per run
/// on more threads than cores (the most hand-overs and out-of-order finishes).
const THREADED: [&[&str]; 3] = [
    &["--threads", "2"],
    &["--threads", "4", "--run-bytes", "1"],
    &["--threads", "3", "--run-bytes", "64K"],
];

const FORMATS: [&[&str]; 4] = [
    &[],
    &["--print-control"],
    &["-f", "raw"],
    &["-f", "%o %k %S %h\\n"],
];

fn assert_same_as_one_thread(file: &Path, format_args: &[&str]) -> Output {
    let single = decode(file, &["--threads", "1"], format_args);
    for thread_args in THREADED {
        let threaded = decode(file, thread_args, format_args);
        assert_eq!(
            threaded.status.code(),
            single.status.code(),
            "{file:?} {thread_args:?} {format_args:?}: exit code"
        );
        assert!(
            threaded.stdout == single.stdout,
            "{file:?} {thread_args:?} {format_args:?}: output differs from --threads 1 ({} vs {} bytes)",
            threaded.stdout.len(),
            single.stdout.len()
        );
        assert_eq!(
            stderr_text(&threaded),
            stderr_text(&single),
            "{file:?} {thread_args:?} {format_args:?}: stderr"
        );
    }
    single
}

#[test]
fn every_fixture_decodes_the_same_on_several_threads() {
    let pairs = fixtures();
    assert!(pairs.len() >= 5, "fixtures found: {}", pairs.len());
    for (bin, _) in pairs {
        let single = assert_same_as_one_thread(&bin, &[]);
        assert!(single.status.success(), "{bin:?}: {}", stderr_text(&single));
        assert!(!single.stdout.is_empty(), "{bin:?}: no records written");
    }
}

#[test]
fn a_large_segment_decodes_the_same_on_several_threads() {
    for shape in SHAPES {
        a_large_segment_decodes_the_same(shape);
    }
}

fn a_large_segment_decodes_the_same(shape: Shape) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = segment(shape);
    assert!(
        data.len() > 2 * DEFAULT_RUN_BYTES,
        "segment is {} bytes",
        data.len()
    );
    let file = write_temp(&dir, "large.log", &data);
    for format_args in FORMATS {
        let single = assert_same_as_one_thread(&file, format_args);
        assert!(single.status.success(), "{}", stderr_text(&single));
    }
    let json = decode(&file, &["--threads", "2"], &[]);
    let records = parse_krec_json(&json.stdout);
    assert_eq!(records.len(), data_records(shape));
    // Input order: offsets strictly increase across the whole file.
    assert!(records.windows(2).all(|w| w[0].offset < w[1].offset));
    let with_markers = decode(
        &file,
        &["--threads", "4", "--run-bytes", "1"],
        &["--print-control"],
    );
    let lines = with_markers
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(lines, data_records(shape) + shape.batches / 100);
}

/// A batch larger than several runs amid small ones: it makes one run of its own, and the
/// batches after it must all still be decoded, once, in order.
#[test]
fn a_batch_larger_than_several_ranges_amid_small_ones_decodes_the_same() {
    let mut data = mixed_segment(300, 25, 100, PRODUCER);
    let before = data_records(Shape {
        batches: 300,
        records_per_batch: 25,
    });
    let mut large = krec_batch::encode::BatchBuilder::new(1_000_000);
    for i in 0..1_000 {
        let value = format!("large {i} {}", "x".repeat(250));
        large = large.record(Some(b"k"), Some(value.as_bytes()), &[]);
    }
    let large = large.build();
    assert!(large.len() > 3 * (64 << 10), "{} bytes", large.len());
    data.extend(large);
    data.extend(mixed_segment(300, 25, 100, PRODUCER));
    assert!(
        batch_spans(&data)[0].len() < 16 << 10,
        "a file of small batches"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_temp(&dir, "mixed.log", &data);
    let single = assert_same_as_one_thread(&file, &[]);
    assert!(single.status.success(), "{}", stderr_text(&single));
    assert_eq!(parse_krec_json(&single.stdout).len(), 2 * before + 1_000);
}

/// The last line of stderr, and the stdout records, must match `--threads 1` exactly, and
/// name the byte of the batch at fault.
fn assert_fails_the_same(data: &[u8], bad_batch_position: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_temp(&dir, "bad.log", data);
    let single = assert_same_as_one_thread(&file, &[]);
    assert_eq!(single.status.code(), Some(1), "{}", stderr_text(&single));
    let message = stderr_text(&single);
    assert!(
        message.contains(&format!(": byte {bad_batch_position}: ")),
        "message names the batch position {bad_batch_position}: {message}"
    );
}

#[test]
fn a_checksum_error_mid_file_prints_the_records_before_it_on_any_thread_count() {
    for shape in SHAPES {
        a_checksum_error_mid_file_prints_the_records_before_it(shape);
    }
}

fn a_checksum_error_mid_file_prints_the_records_before_it(shape: Shape) {
    let mut data = segment(shape);
    let spans = batch_spans(&data);
    let bad = spans[spans.len() / 2 + 3].clone();
    // The last byte of the batch body: covered by the CRC, so the checksum fails.
    data[bad.end - 1] ^= 0x5a;
    assert_fails_the_same(&data, bad.start);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_temp(&dir, "bad.log", &data);
    let output = decode(&file, &["--threads", "2"], &[]);
    let first_bad_offset = krec_batch::EntryHeader::peek_base_offset(&data[bad.start..]).unwrap();
    let records = parse_krec_json(&output.stdout);
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r.offset < first_bad_offset));
    assert_eq!(
        records.last().map(|r| r.offset),
        Some(first_bad_offset - 1),
        "every record before the bad batch is printed"
    );
}

#[test]
fn a_bad_length_field_mid_file_fails_the_same_on_any_thread_count() {
    // Negative; and longer than the rest of the file and than the default batch limit.
    for (length, nth) in [(-1i32, 3), (i32::MAX, 2)] {
        for shape in SHAPES {
            let mut data = segment(shape);
            let spans = batch_spans(&data);
            let bad = spans[spans.len() / nth].clone();
            data[bad.start + 8..bad.start + 12].copy_from_slice(&length.to_be_bytes());
            assert_fails_the_same(&data, bad.start);
        }
    }
}

#[test]
fn a_truncated_last_batch_fails_the_same_on_any_thread_count() {
    for shape in SHAPES {
        let mut data = segment(shape);
        let last = batch_spans(&data).pop().expect("batches");
        data.truncate(last.start + (last.end - last.start) / 2);
        assert_fails_the_same(&data, last.start);
        // Cut inside the last batch's length field.
        data.truncate(last.start + 10);
        assert_fails_the_same(&data, last.start);
    }
}

#[test]
fn a_bad_record_inside_a_batch_prints_that_batchs_earlier_records() {
    for shape in SHAPES {
        a_bad_record_inside_a_batch_prints_earlier_records(shape);
    }
}

fn a_bad_record_inside_a_batch_prints_earlier_records(shape: Shape) {
    // An uncompressed data batch declaring one record more than it holds, CRC unchecked: the
    // records before it in the same batch are written, then the error.
    let mut data = segment(shape);
    let spans = batch_spans(&data);
    let bad = spans
        .iter()
        .skip(spans.len() / 2)
        .find(|span| data[span.start + 22] & 0x27 == 0)
        .expect("an uncompressed data batch")
        .clone();
    // The records count field (last 4 bytes of the 61-byte header) says one more than is there.
    let count_at = bad.start + krec_batch::layout::v2::RECORD_COUNT_AT;
    let count = i32::from_be_bytes(data[count_at..count_at + 4].try_into().unwrap());
    data[count_at..count_at + 4].copy_from_slice(&(count + 1).to_be_bytes());
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_temp(&dir, "bad.log", &data);
    let single = decode(&file, &["--threads", "1", "--no-crc"], &[]);
    assert_eq!(single.status.code(), Some(1), "{}", stderr_text(&single));
    for thread_args in [
        &["--threads", "2", "--no-crc"][..],
        &["--threads", "4", "--run-bytes", "1", "--no-crc"],
    ] {
        let threaded = decode(&file, thread_args, &[]);
        assert_eq!(threaded.status.code(), Some(1));
        assert!(
            threaded.stdout == single.stdout,
            "{thread_args:?}: output differs"
        );
        assert_eq!(
            stderr_text(&threaded),
            stderr_text(&single),
            "{thread_args:?}"
        );
    }
}

fn format_args(format: Option<&str>) -> FormatArgs {
    FormatArgs {
        format: format.map(str::to_owned),
        json: false,
        print_control: false,
        delimiter: None,
        key_delimiter: None,
        null_as_text: false,
        filter: Default::default(),
        schema: Default::default(),
    }
}

#[test]
fn the_library_call_matches_decode_bytes_and_counts_the_same() {
    let data = segment(SMALL_BATCHES);
    let config = DecodeConfig::default();
    let format = format_args(Some("%o %s\\n"));
    let context = RecordContext::unknown();
    let mut writer = format.writer(Vec::new()).expect("valid format");
    let single = decode_bytes(&data, &config, &context, &mut writer).expect("decodes");
    let expected = writer.into_inner().expect("flush");
    for (threads, run_bytes) in [(2, 1 << 20), (5, 1), (3, 100_000)] {
        let mut out = Vec::new();
        let parallelism = Parallelism {
            threads: NonZeroUsize::new(threads).expect("non-zero"),
            run_bytes,
        };
        let summary =
            decode_bytes_parallel(&data, &config, &context, &format, parallelism, &mut out)
                .expect("decodes");
        assert_eq!(summary, single, "threads {threads}, run {run_bytes}");
        assert!(
            out == expected,
            "threads {threads}, run {run_bytes}: output differs"
        );
    }
    assert_eq!(single.records as usize, data_records(SMALL_BATCHES));
    assert_eq!(single.batches as usize, SMALL_BATCHES.batches);
}

#[test]
fn the_library_call_reports_the_files_byte_position() {
    let mut data = segment(SMALL_BATCHES);
    let spans = batch_spans(&data);
    let bad = spans[spans.len() - 10].clone();
    data[bad.end - 1] ^= 1;
    let config = DecodeConfig::default();
    let format = format_args(None);
    let parallelism = Parallelism {
        threads: NonZeroUsize::new(3).expect("non-zero"),
        run_bytes: 4096,
    };
    let mut out = Vec::new();
    let result = decode_bytes_parallel(
        &data,
        &config,
        &RecordContext::unknown(),
        &format,
        parallelism,
        &mut out,
    );
    match result {
        Err(DecodeFailure::Input { error, position }) => {
            assert_eq!(position, bad.start);
            assert_eq!(error.position(), Some(bad.start), "{error}");
        }
        other => panic!("expected an input failure, got {other:?}"),
    }
    let first_bad_offset = krec_batch::EntryHeader::peek_base_offset(&data[bad.start..]).unwrap();
    let printed = parse_krec_json(&out);
    assert_eq!(printed.last().map(|r| r.offset), Some(first_bad_offset - 1));
}
