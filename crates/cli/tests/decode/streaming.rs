//! `krec decode` reads every input run by run, on one thread as on several, from a file as
//! from standard input: its output and its error message are those of one walk over the whole
//! image in memory (`decode_bytes`), whatever the run size, and its memory does not grow with
//! the input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::decode::{batch_spans, krec, mixed_segment, stderr_text};
#[cfg(target_os = "linux")]
use crate::support::process::peak_rss;
use krec_batch::encode::BatchBuilder;
use krec_batch::DecodeConfig;
use krec_cli::decode::{decode_bytes, DecodeFailure, DEFAULT_RUN_BYTES};
use krec_cli::format::{FormatArgs, RecordContext};

/// A segment of `batches` batches of 20 records, codecs in turn, a transaction marker every
/// 50 batches.
fn segment(batches: usize) -> Vec<u8> {
    mixed_segment(batches, 20, 50, 5)
}

/// Uncompressed batches of one record with a `value_bytes` value, from `first_offset` on.
fn plain_batches(first_offset: i64, count: usize, value_bytes: usize) -> Vec<u8> {
    let value = vec![b'x'; value_bytes];
    (0..count)
        .flat_map(|i| {
            BatchBuilder::new(first_offset + i as i64)
                .record(Some(b"key"), Some(&value), &[])
                .build()
        })
        .collect()
}

fn template(text: &str) -> FormatArgs {
    FormatArgs {
        format: Some(text.to_owned()),
        ..FormatArgs::default()
    }
}

/// What one walk over the whole image writes, and the stderr `krec decode` must print for
/// `file` (empty on success).
fn whole_walk(data: &[u8], config: &DecodeConfig, format: &FormatArgs, file: &str) -> Expected {
    whole_walk_in(data, config, format, file, &RecordContext::unknown())
}

/// [`whole_walk`] of a file whose records carry `context`.
fn whole_walk_in(
    data: &[u8],
    config: &DecodeConfig,
    format: &FormatArgs,
    file: &str,
    context: &RecordContext<'_>,
) -> Expected {
    let mut writer = format.writer(Vec::new()).expect("valid format");
    let result = decode_bytes(data, config, context, &mut writer);
    let stdout = writer.into_inner().expect("a Vec never fails");
    let stderr = match result {
        Ok(_) => String::new(),
        Err(DecodeFailure::Input { error, position }) => {
            let error = krec_cli::Error::DecodeInput {
                file: file.to_owned(),
                position,
                offset: error.offset(),
                source: error,
            };
            format!("krec decode: {error}\n")
        }
        Err(DecodeFailure::Output(error)) => panic!("writing to a Vec: {error}"),
        Err(DecodeFailure::Read(error)) => panic!("a walk of bytes reads nothing: {error:?}"),
    };
    Expected { stdout, stderr }
}

#[derive(Debug)]
struct Expected {
    stdout: Vec<u8>,
    stderr: String,
}

impl Expected {
    fn assert_matches(&self, output: &Output, what: &str) {
        assert_eq!(stderr_text(output), self.stderr, "{what}: stderr");
        assert_eq!(
            output.status.code(),
            Some(if self.stderr.is_empty() { 0 } else { 1 }),
            "{what}: exit code"
        );
        assert!(
            output.stdout == self.stdout,
            "{what}: output differs from the whole walk's ({} vs {} bytes)",
            output.stdout.len(),
            self.stdout.len()
        );
    }
}

fn write_temp(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, data).expect("write temp file");
    path
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// `krec decode ARGS... -` with `data` on standard input (written from a thread of its own,
/// so a large output cannot block the input).
fn krec_stdin(args: &[&str], data: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_krec"))
        .arg("decode")
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("krec runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let data = data.to_vec();
    let writer = std::thread::spawn(move || {
        // krec stops reading at an error; the rest of the input is not wanted then.
        let _ = stdin.write_all(&data);
    });
    let output = child.wait_with_output().expect("krec exits");
    writer.join().expect("stdin writer");
    output
}

/// Decodes `file` with each of the thread and run settings and checks against `expected`.
fn assert_every_setting(
    file: &Path,
    format_args: &[&str],
    settings: &[&[&str]],
    expected: &Expected,
) {
    for setting in settings {
        let mut args = vec!["decode"];
        args.extend_from_slice(setting);
        args.extend_from_slice(format_args);
        args.push(path_str(file));
        expected.assert_matches(&krec(&args), &format!("{args:?}"));
    }
}

/// One thread with runs of one batch, of a few batches, and of many; then two threads.
const SETTINGS: [&[&str]; 5] = [
    &["--threads", "1", "--run-bytes", "1"],
    &["--threads", "1", "--run-bytes", "4K"],
    &["--threads", "1", "--run-bytes", "64K"],
    &["--threads", "1"],
    &["--threads", "2", "--run-bytes", "4K"],
];

#[test]
fn one_thread_decodes_a_file_of_many_runs_as_the_whole_walk_does() {
    let data = segment(2400);
    // Several runs even of the default size.
    assert!(
        data.len() > DEFAULT_RUN_BYTES * 3 / 2,
        "{} bytes",
        data.len()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_temp(&dir, "many-runs.log", &data);
    let config = DecodeConfig::default();
    for (format_args, format) in [
        (&[][..], FormatArgs::default()),
        (&["-f", "%o %k %S %h\\n"][..], template("%o %k %S %h\\n")),
    ] {
        let expected = whole_walk(&data, &config, &format, path_str(&file));
        assert!(expected.stderr.is_empty(), "{}", expected.stderr);
        assert!(!expected.stdout.is_empty());
        assert_every_setting(&file, format_args, &SETTINGS, &expected);
    }
}

#[test]
fn a_batch_larger_than_a_run_is_read_whole() {
    let mut data = plain_batches(0, 30, 100);
    let big_start = data.len();
    data.extend(plain_batches(30, 1, 300_000));
    let big_end = data.len();
    data.extend(plain_batches(31, 30, 100));
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_temp(&dir, "big-batch.log", &data);
    let format = template("%o %S\\n");
    let config = DecodeConfig::default();
    let expected = whole_walk(&data, &config, &format, path_str(&file));
    assert!(expected.stderr.is_empty(), "{}", expected.stderr);
    let settings: [&[&str]; 3] = [
        &["--threads", "1", "--run-bytes", "64K"],
        &["--threads", "1", "--run-bytes", "1"],
        &["--threads", "3", "--run-bytes", "64K"],
    ];
    assert_every_setting(&file, &["-f", "%o %S\\n"], &settings, &expected);

    // One byte under its size, the big batch is refused by its length alone, at its byte.
    let limit = big_end - big_start - 1;
    let limited = DecodeConfig {
        max_batch_bytes: limit,
        ..DecodeConfig::default()
    };
    let expected = whole_walk(&data, &limited, &format, path_str(&file));
    assert!(
        expected
            .stderr
            .contains(&format!(": byte {big_start}: offset 30: ")),
        "{}",
        expected.stderr
    );
    let limit = limit.to_string();
    for threads in ["1", "2"] {
        let args = [
            "decode",
            "--threads",
            threads,
            "--run-bytes",
            "4K",
            "--max-batch-bytes",
            &limit,
            "-f",
            "%o %S\\n",
            path_str(&file),
        ];
        expected.assert_matches(&krec(&args), &format!("{args:?}"));
    }
}

#[test]
fn a_truncated_last_batch_is_reported_at_its_byte() {
    let whole = segment(300);
    let last = batch_spans(&whole).pop().expect("batches");
    let dir = tempfile::tempdir().expect("temp dir");
    let format = FormatArgs::default();
    let config = DecodeConfig::default();
    // Cut inside the body, and inside the length field.
    for cut in [last.start + (last.end - last.start) / 2, last.start + 10] {
        let data = &whole[..cut];
        let file = write_temp(&dir, &format!("cut-{cut}.log"), data);
        let expected = whole_walk(data, &config, &format, path_str(&file));
        assert!(
            expected
                .stderr
                .contains(&format!(": byte {}: offset ", last.start)),
            "{}",
            expected.stderr
        );
        assert!(expected.stderr.contains("truncated"), "{}", expected.stderr);
        assert_every_setting(&file, &[], &SETTINGS, &expected);
    }
}

#[test]
fn errors_mid_file_name_the_same_byte_and_offset_as_the_whole_walk() {
    let good = segment(400);
    let spans = batch_spans(&good);
    let dir = tempfile::tempdir().expect("temp dir");
    let format = FormatArgs::default();

    let mut checksum = good.clone();
    let bad = spans[spans.len() / 2 + 1].clone();
    checksum[bad.end - 1] ^= 0x21;

    let mut negative_length = good.clone();
    let bad = spans[spans.len() / 3].clone();
    negative_length[bad.start + 8..bad.start + 12].copy_from_slice(&(-7i32).to_be_bytes());

    // An uncompressed batch declaring one record more than it holds (read with --no-crc):
    // the records of that batch before the error are written too.
    let mut record_count = good.clone();
    let bad = spans
        .iter()
        .skip(spans.len() / 2)
        .find(|span| good[span.start + 22] & 0x27 == 0)
        .expect("an uncompressed data batch")
        .clone();
    let count_at = bad.start + krec_batch::layout::v2::RECORD_COUNT_AT;
    let count = i32::from_be_bytes(good[count_at..count_at + 4].try_into().expect("4 bytes"));
    record_count[count_at..count_at + 4].copy_from_slice(&(count + 1).to_be_bytes());

    for (name, data, no_crc) in [
        ("checksum", checksum, false),
        ("negative-length", negative_length, false),
        ("record-count", record_count, true),
    ] {
        let file = write_temp(&dir, &format!("{name}.log"), &data);
        let config = DecodeConfig {
            verify_crc: !no_crc,
            ..DecodeConfig::default()
        };
        let expected = whole_walk(&data, &config, &format, path_str(&file));
        assert!(!expected.stderr.is_empty(), "{name} must fail");
        assert!(!expected.stdout.is_empty(), "{name}: records before it");
        let crc_args: &[&str] = if no_crc { &["--no-crc"] } else { &[] };
        assert_every_setting(&file, crc_args, &SETTINGS, &expected);
    }
}

#[test]
fn standard_input_streams_like_a_file() {
    let data = segment(500);
    let format = template("%o %k %s\\n");
    let expected = whole_walk(&data, &DecodeConfig::default(), &format, "-");
    assert!(expected.stderr.is_empty(), "{}", expected.stderr);
    for setting in SETTINGS {
        let mut args = setting.to_vec();
        args.extend(["-f", "%o %k %s\\n"]);
        expected.assert_matches(&krec_stdin(&args, &data), &format!("stdin {args:?}"));
    }

    let mut bad = data.clone();
    let spans = batch_spans(&data);
    let at = spans[spans.len() - 5].clone();
    bad[at.end - 1] ^= 1;
    let expected = whole_walk(&bad, &DecodeConfig::default(), &format, "-");
    assert!(
        expected
            .stderr
            .starts_with(&format!("krec decode: -: byte {}: ", at.start)),
        "{}",
        expected.stderr
    );
    for setting in SETTINGS {
        let mut args = setting.to_vec();
        args.extend(["-f", "%o %k %s\\n"]);
        expected.assert_matches(&krec_stdin(&args, &bad), &format!("bad stdin {args:?}"));
    }
}

#[test]
fn standard_input_over_the_limit_is_refused_after_whole_records() {
    let data = segment(200);
    let limit = data.len() - 1;
    let limit_text = limit.to_string();
    let format = template("%o\\n");
    let reference = whole_walk(&data, &DecodeConfig::default(), &format, "-");
    let mut outputs = Vec::new();
    for threads in ["1", "2"] {
        let args = [
            "--threads",
            threads,
            "--run-bytes",
            "4K",
            "--max-file-bytes",
            &limit_text,
            "-f",
            "%o\\n",
        ];
        let output = krec_stdin(&args, &data);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert_eq!(
            stderr_text(&output),
            format!(
                "krec decode: -: {} bytes, over the limit of {limit} (raise --max-file-bytes)\n",
                limit + 1
            ),
            "{args:?}"
        );
        // What was written is a prefix of the whole output, ending on a whole record.
        assert!(
            reference.stdout.starts_with(&output.stdout),
            "{args:?}: output is not a prefix of the whole walk's"
        );
        assert!(output.stdout.len() < reference.stdout.len(), "{args:?}");
        assert!(output.stdout.is_empty() || output.stdout.ends_with(b"\n"));
        outputs.push(output.stdout);
    }
    // Both write every run read before the limit, then stop.
    assert!(
        outputs[0] == outputs[1],
        "1 and 2 threads wrote different records"
    );
    assert!(
        !outputs[0].is_empty(),
        "the runs under the limit are written"
    );
    let exact = (data.len()).to_string();
    let output = krec_stdin(&["--max-file-bytes", &exact, "-f", "%o\\n"], &data);
    reference.assert_matches(&output, "stdin exactly at the limit");
}

/// 96 MiB through standard input, with 1 MiB runs: the peak memory of krec, taken while it
/// still waits for the end of its input, stays far below the input's size.
#[cfg(target_os = "linux")]
#[test]
fn memory_does_not_grow_with_the_input() {
    const INPUT: usize = 96 << 20;
    const BOUND: u64 = 40 << 20;
    let unit = plain_batches(0, 64, 16 << 10);
    let repeats = INPUT / unit.len() + 1;
    for threads in ["1", "2"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_krec"))
            .args(["decode", "--threads", threads, "--run-bytes", "1M"])
            .args(["-f", "%o\\n", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("krec runs");
        let mut stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            let mut sink = Vec::new();
            std::io::Read::read_to_end(&mut stdout, &mut sink).expect("read output");
            sink
        });
        let mut stdin = child.stdin.take().expect("stdin");
        for _ in 0..repeats {
            stdin.write_all(&unit).expect("krec reads its input");
        }
        stdin.flush().expect("flush");
        let peak = peak_rss(child.id());
        drop(stdin);
        let output = child.wait_with_output().expect("krec exits");
        let printed = reader.join().expect("output reader");
        assert!(output.status.success(), "{}", stderr_text(&output));
        assert_eq!(
            printed.iter().filter(|&&b| b == b'\n').count(),
            repeats * 64,
            "threads {threads}: one line per record"
        );
        assert!(
            peak < BOUND,
            "threads {threads}: peak RSS {peak} bytes after {} bytes of input",
            repeats * unit.len()
        );
    }
}

/// Several files on one set of threads: each file's records in order with its own topic and
/// partition (from its `TOPIC-N` directory), and a failure in a later file after all the
/// records of the earlier ones.
#[test]
fn several_files_share_the_threads_and_keep_their_order_and_context() {
    let dir = tempfile::tempdir().expect("temp dir");
    let segments = [segment(150), plain_batches(0, 300, 700), segment(90)];
    let mut files = Vec::new();
    for (partition, data) in segments.iter().enumerate() {
        let partition_dir = dir.path().join(format!("orders-{partition}"));
        std::fs::create_dir(&partition_dir).expect("partition dir");
        let file = partition_dir.join("00000000000000000000.log");
        std::fs::write(&file, data).expect("write segment");
        files.push(file);
    }
    let format = FormatArgs::default();
    let config = DecodeConfig::default();
    let mut expected = Expected {
        stdout: Vec::new(),
        stderr: String::new(),
    };
    for (partition, (data, file)) in segments.iter().zip(&files).enumerate() {
        let context = RecordContext::new("orders", partition as i32);
        let one = whole_walk_in(data, &config, &format, path_str(file), &context);
        assert!(one.stderr.is_empty(), "{}", one.stderr);
        expected.stdout.extend(one.stdout);
    }
    let paths: Vec<&str> = files.iter().map(|f| path_str(f)).collect();
    for setting in SETTINGS {
        let mut args = vec!["decode"];
        args.extend_from_slice(setting);
        args.extend_from_slice(&paths);
        expected.assert_matches(&krec(&args), &format!("{args:?}"));
    }

    // The second file goes bad half-way: the first file whole, the second up to the bad
    // batch, then its message; the third is not read.
    let mut bad = segments[1].clone();
    let spans = batch_spans(&bad);
    let at = spans[spans.len() / 2].clone();
    bad[at.end - 1] ^= 0x40;
    std::fs::write(&files[1], &bad).expect("rewrite segment");
    let first = whole_walk_in(
        &segments[0],
        &config,
        &format,
        paths[0],
        &RecordContext::new("orders", 0),
    );
    let second = whole_walk_in(
        &bad,
        &config,
        &format,
        paths[1],
        &RecordContext::new("orders", 1),
    );
    assert!(second.stderr.contains(&format!(": byte {}: ", at.start)));
    let expected = Expected {
        stdout: [first.stdout, second.stdout].concat(),
        stderr: second.stderr,
    };
    for setting in SETTINGS {
        let mut args = vec!["decode"];
        args.extend_from_slice(setting);
        args.extend_from_slice(&paths);
        expected.assert_matches(&krec(&args), &format!("bad second file {args:?}"));
    }
}

/// A later file that cannot be opened, or is over --max-file-bytes, is reported only after
/// every record of the files before it, on one thread as on several (which read ahead into
/// the next file while the previous one decodes).
#[test]
fn a_later_file_that_cannot_be_read_comes_after_all_earlier_records() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = segment(200);
    let big = plain_batches(0, 200, 2000);
    let first_file = write_temp(&dir, "first.log", &first);
    let big_file = write_temp(&dir, "big.log", &big);
    let missing = dir.path().join("missing.log");
    let format = FormatArgs::default();
    let expected_stdout = whole_walk(&first, &DecodeConfig::default(), &format, "").stdout;
    let limit = (first.len().max(big.len()) - 1).to_string();
    assert!(
        first.len() < big.len(),
        "the limit refuses only the second file"
    );
    for threads in ["1", "2", "3"] {
        let decode = |rest: &[&str]| {
            krec(&[&["decode", "--threads", threads, "--run-bytes", "4K"], rest].concat())
        };
        let output = decode(&[
            path_str(&first_file),
            path_str(&missing),
            path_str(&first_file),
        ]);
        assert_eq!(output.status.code(), Some(1), "threads {threads}");
        assert!(
            output.stdout == expected_stdout,
            "threads {threads}: missing file"
        );
        let stderr = stderr_text(&output);
        assert!(
            stderr.starts_with(&format!("krec decode: reading {}: ", missing.display())),
            "threads {threads}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");

        let output = decode(&[
            "--max-file-bytes",
            &limit,
            path_str(&first_file),
            path_str(&big_file),
        ]);
        assert_eq!(output.status.code(), Some(1), "threads {threads}");
        assert!(
            output.stdout == expected_stdout,
            "threads {threads}: big file"
        );
        assert_eq!(
            stderr_text(&output),
            format!(
                "krec decode: {}: {} bytes, over the limit of {limit} (raise --max-file-bytes)\n",
                big_file.display(),
                big.len()
            ),
            "threads {threads}"
        );
    }
}
