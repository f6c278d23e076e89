//! `krec decode --on-corrupt`: corrupt batches between good ones (a CRC flip, compressed data
//! cut short, a record count that lies) are reported with their offsets and byte position and
//! skipped whole under `skip` (exit 3), and stop the decode under `stop`, the default (exit 1).

use std::path::{Path, PathBuf};

use crate::support::decode::{
    batch_spans, data_dir, krec, parse_krec_json, read_expected, resign_v2, stderr_text,
    ExpectedRecord,
};
use krec_batch::layout::v2::RECORD_COUNT_AT;
use krec_batch::layout::LENGTH_AT;

/// One corrupt batch as the report must name it.
#[derive(Debug)]
struct Bad {
    offsets: (i64, i64),
    position: usize,
    size: usize,
    /// A part of krec-batch's description of the fault.
    reason: &'static str,
}

/// The five-batch fixture (codecs none, gzip, snappy, lz4, zstd; offsets 0-2, 3-5, 6-8,
/// 9-11, 12-14) with batches 0, 1 and 3 corrupted; batches 2 and 4 are good.
struct Corrupted {
    data: Vec<u8>,
    bad: Vec<Bad>,
    good: Vec<ExpectedRecord>,
}

fn corrupted() -> Corrupted {
    let name = "kafka-python-v2-multi";
    let data = std::fs::read(data_dir().join(format!("{name}.bin"))).expect("fixture");
    let expected = read_expected(&data_dir().join(format!("{name}.expected.jsonl")));
    let mut batches: Vec<Vec<u8>> = batch_spans(&data)
        .into_iter()
        .map(|span| data[span].to_vec())
        .collect();
    assert_eq!(batches.len(), 5);
    // A record count that lies: 4 declared, 3 present; the CRC matches the lie.
    batches[0][RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&4i32.to_be_bytes());
    resign_v2(&mut batches[0]);
    // A flipped byte in the gzip payload, the CRC left as the producer wrote it.
    let last = batches[1].len() - 1;
    batches[1][last] ^= 0x55;
    // The LZ4 payload cut short, the length and CRC made to agree with the cut.
    let cut = batches[3].len() - 16;
    batches[3].truncate(cut);
    let length = (cut - 12) as i32;
    batches[3][LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes());
    resign_v2(&mut batches[3]);

    let mut starts = Vec::new();
    let mut at = 0;
    for batch in &batches {
        starts.push(at);
        at += batch.len();
    }
    let bad = |index: usize, offsets, reason| Bad {
        offsets,
        position: starts[index],
        size: batches[index].len(),
        reason,
    };
    let bad = vec![
        bad(0, (0, 2), "declares 4 records but holds 3"),
        bad(1, (3, 5), "checksum mismatch"),
        bad(3, (9, 11), "Lz4"),
    ];
    let good = expected
        .into_iter()
        .filter(|r| (6..=8).contains(&r.offset) || (12..=14).contains(&r.offset))
        .collect();
    Corrupted {
        data: batches.concat(),
        bad,
        good,
    }
}

fn write_temp(dir: &tempfile::TempDir, data: &[u8]) -> PathBuf {
    let path = dir.path().join("corrupt.log");
    std::fs::write(&path, data).expect("write temp file");
    path
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// The report line of `bad` up to the error's own words, which follow it.
fn report_prefix(file: &Path, context: &str, bad: &Bad) -> String {
    format!(
        "krec decode: skipped corrupt batch: file={} {context} offsets={}..{} position={} bytes={}: ",
        file.display(),
        bad.offsets.0,
        bad.offsets.1,
        bad.position,
        bad.size
    )
}

#[test]
fn skip_prints_every_good_record_once_and_reports_each_bad_batch_where_it_lies() {
    let corrupted = corrupted();
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, &corrupted.data);
    let path = path_str(&file);
    let runs: [&[&str]; 3] = [
        &["--threads", "1"],
        &["--threads", "1", "--run-bytes", "1"],
        // Every batch a run of its own: the reports come from the decode threads.
        &["--threads", "3", "--run-bytes", "1"],
    ];
    for threads in runs {
        let mut args = vec![
            "decode",
            "--on-corrupt",
            "skip",
            "--topic",
            "t",
            "--partition",
            "4",
        ];
        args.extend_from_slice(threads);
        args.push(path);
        let output = krec(&args);
        let stderr = stderr_text(&output);
        assert_eq!(output.status.code(), Some(3), "{args:?}: {stderr}");
        assert_eq!(parse_krec_json(&output.stdout), corrupted.good, "{args:?}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), corrupted.bad.len() + 1, "{args:?}: {stderr}");
        for (line, bad) in lines.iter().zip(&corrupted.bad) {
            let prefix = report_prefix(&file, "topic=t partition=4", bad);
            assert!(
                line.starts_with(&prefix),
                "{args:?}:\n{line}\nexpected {prefix}"
            );
            let reason = &line[prefix.len()..];
            assert!(reason.contains(bad.reason), "{args:?}: {line}");
            // The error's own position is the file's too.
            let at = format!("batch at byte {} ", bad.position);
            assert!(reason.contains(&at), "{args:?}: {line}");
        }
        assert_eq!(lines[3], "krec decode: 3 corrupt batches skipped");
    }
}

#[test]
fn stop_is_the_default_and_fails_at_the_first_bad_batch_as_before() {
    let corrupted = corrupted();
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, &corrupted.data);
    for args in [
        vec!["decode", path_str(&file)],
        vec!["decode", "--on-corrupt", "stop", path_str(&file)],
    ] {
        let output = krec(&args);
        let stderr = stderr_text(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        let prefix = format!("krec decode: {}: byte 0: offset 0: ", file.display());
        assert!(stderr.starts_with(&prefix), "{stderr}");
        assert!(
            stderr.contains("declares 4 records but holds 3"),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        // Today's behaviour: the records before the bad spot are written, even in its batch.
        let offsets: Vec<i64> = parse_krec_json(&output.stdout)
            .iter()
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, [0, 1, 2]);
    }
}

#[test]
fn a_batch_whose_length_cannot_be_trusted_stops_even_under_skip() {
    let corrupted = corrupted();
    let mut data = corrupted.data;
    // The last batch claims to run far past the end of the file: no next batch can be found.
    let last = batch_spans(&data).last().unwrap().start;
    data[last + LENGTH_AT..last + LENGTH_AT + 4].copy_from_slice(&(1i32 << 20).to_be_bytes());
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, &data);
    let output = krec(&[
        "decode",
        "--on-corrupt",
        "skip",
        "--threads",
        "1",
        path_str(&file),
    ]);
    let stderr = stderr_text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 4, "three reports, then the error: {stderr}");
    for (line, bad) in lines.iter().zip(&corrupted.bad) {
        let prefix = report_prefix(&file, "topic=unknown partition=unknown", bad);
        assert!(line.starts_with(&prefix), "{line}");
    }
    let error = format!(
        "krec decode: {}: byte {last}: offset 12: truncated batch",
        file.display()
    );
    assert!(lines[3].starts_with(&error), "{}", lines[3]);
    let offsets: Vec<i64> = parse_krec_json(&output.stdout)
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, [6, 7, 8]);
}

#[test]
fn skip_on_sound_input_exits_0_and_an_unknown_policy_is_a_usage_error() {
    let file = data_dir().join("kafka-python-v2-multi.bin");
    let output = krec(&["decode", "--on-corrupt", "skip", path_str(&file)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
    assert_eq!(parse_krec_json(&output.stdout).len(), 15);
    assert!(output.stderr.is_empty());
    let output = krec(&["decode", "--on-corrupt", "ignore", path_str(&file)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr_text(&output).contains("expected stop or skip"));
}
