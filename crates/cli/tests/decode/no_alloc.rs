//! Writing records allocates nothing per record: after the writer's buffer
//! exists, JSON, templates and raw output render every record of a segment
//! without touching the heap (counted by a per-thread counting allocator); and `krec
//! produce` reads line input (and builds the producer's records from it) and JSON lines without
//! it too.

use std::io;

use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, DecodeConfig, Record};
use krec_cli::format::{OutputFormat, RecordContext, RecordWriter, Template};
use krec_testkit::CountingAllocator;

/// Counts per thread, so the other tests of this binary running at once do not disturb it.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

fn allocations() -> u64 {
    ALLOCATOR.thread().allocations
}

/// One batch of records with text, escapes, binary bytes, nulls and headers.
fn segment() -> Vec<u8> {
    let mut builder = BatchBuilder::new(0).base_timestamp(1_764_460_800_000);
    for i in 0..300u32 {
        let key = format!("key-{i}");
        let value: Vec<u8> = match i % 3 {
            0 => format!("{{\"n\":{i},\"s\":\"a\\\"b\\nc\"}}").into_bytes(),
            1 => (0..200).map(|j| (i + j) as u8 | 0x80).collect(),
            _ => "héllo wörld ".repeat(10).into_bytes(),
        };
        builder = builder.record(
            (i % 5 != 0).then_some(key.as_bytes()),
            (i % 7 != 0).then_some(value.as_slice()),
            &[
                (b"trace", Some(b"abc")),
                (b"\xff\xfe", None),
                (b"trace", Some(b"\x00\x01")),
            ],
        );
    }
    builder.build()
}

#[test]
fn writing_records_does_not_allocate() {
    let data = segment();
    let config = DecodeConfig::default();
    let formats = [
        ("json", OutputFormat::Json),
        (
            "template",
            OutputFormat::Template(
                Template::parse("%t %p %o %T %K %k %S %s %h %{h:trace} %{h:none}\\n")
                    .expect("valid"),
            ),
        ),
        ("raw", OutputFormat::Raw(Default::default())),
    ];
    let ctx = RecordContext::new("orders", 3);
    for (name, format) in formats {
        let mut writer = RecordWriter::new(io::sink(), format).with_null_text(b"NULL");
        for batch in BatchWalk::new(&data, &config) {
            let batch = batch.expect("valid batch");
            let records: Vec<Record<'_>> = batch
                .records()
                .collect::<Result<_, _>>()
                .expect("valid records");
            assert_eq!(records.len(), 300);
            // The header index is built on first use; build it outside the count
            // so only the writer is measured.
            let headers: usize = records.iter().map(|r| r.headers().len()).sum();
            assert_eq!(headers, 900);
            let before = allocations();
            for record in &records {
                writer.write_record(&ctx, record).expect("sink");
            }
            writer.flush().expect("sink");
            let during = allocations() - before;
            assert_eq!(during, 0, "{name}: {during} allocations for 300 records");
        }
    }
}

#[test]
fn the_counter_sees_allocations() {
    let before = allocations();
    let boxed = std::hint::black_box(Box::new([0u8; 64]));
    assert!(allocations() > before, "a Box allocates");
    drop(boxed);
}

/// `krec produce`'s hot path: once its buffer exists, line input (`-K`, `-k`, `-H`) yields
/// each record borrowed, and the producer's record built from it, without touching the heap.
#[test]
fn reading_produce_lines_does_not_allocate() {
    use krec_cli::produce::input::lines::LineFormat;
    use krec_cli::produce::{Input, InputFormat};
    use krec_producer::{Payload, ProducerRecord};

    let text: String = (0..2000)
        .map(|i| match i % 3 {
            0 => format!("key-{i}:value-{i}\n"),
            1 => format!("no key {i}\n"),
            _ => "\n".to_owned(),
        })
        .collect();
    let format = LineFormat {
        key_delimiter: Some(b":".to_vec()),
        fixed_key: Some(b"fixed".to_vec()),
        headers: vec![
            (b"source".to_vec(), Some(b"test".to_vec())),
            (b"n".to_vec(), None),
        ],
        ..LineFormat::default()
    };
    let reader = Box::new(io::Cursor::new(text.into_bytes()));
    let mut input = Input::from_reader(InputFormat::Lines(format), "stdin", reader, 1 << 20);
    let mut sizes = 0usize;
    let mut read = |input: &mut Input| -> bool {
        let Some(record) = input.next_borrowed().expect("valid input") else {
            return false;
        };
        // As the send loop builds it (crates/cli/src/produce/run.rs, `producer_record`).
        let headers = (record.headers.iter())
            .map(|(name, value)| (Payload::from(name), value.as_ref().map(Payload::from)));
        let to_send = ProducerRecord::from_parts(
            "orders",
            record.partition,
            record.timestamp,
            record.key.map(Payload::from),
            record.value.map(Payload::from),
            headers,
        );
        sizes += std::hint::black_box(&to_send).topic().len();
        true
    };
    // The first record makes the input's buffer.
    assert!(read(&mut input));
    let before = allocations();
    let mut records = 1;
    while read(&mut input) {
        records += 1;
    }
    let allocated = allocations() - before;
    assert_eq!(records, 1334, "every non-empty line is a record");
    assert_eq!(allocated, 0, "allocations while reading {records} records");
    assert!(sizes > 0);
}

/// `krec produce -J`'s hot path: once its storage has grown to the input's records, reading
/// `krec consume -J`'s lines (escaped text, base64 bytes, null keys, values and headers)
/// touches the heap no more. (The producer's record is left out: it keeps two headers inline
/// and these records have four.)
#[test]
fn reading_produce_json_lines_does_not_allocate() {
    use krec_cli::produce::input::json::JsonFormat;
    use krec_cli::produce::{Input, InputFormat};

    let data = segment();
    let mut text = Vec::new();
    let mut writer = RecordWriter::new(&mut text, OutputFormat::Json);
    let rounds = 5;
    for _ in 0..rounds {
        for batch in BatchWalk::new(&data, &DecodeConfig::default()) {
            for record in batch.expect("valid batch").records() {
                let record = record.expect("valid record");
                writer
                    .write_record(&RecordContext::new("orders", 3), &record)
                    .expect("to memory");
            }
        }
    }
    writer.flush().expect("to memory");
    drop(writer);
    let format = JsonFormat {
        headers: vec![(b"copied".to_vec(), Some(b"yes".to_vec()))],
        ..JsonFormat::default()
    };
    let reader = Box::new(io::Cursor::new(text));
    let mut input = Input::from_reader(InputFormat::Json(format), "stdin", reader, 1 << 20);
    let read = |input: &mut Input| -> Option<(u64, usize)> {
        let before = allocations();
        let record = input.next_borrowed().expect("valid input")?;
        let allocated = allocations() - before;
        assert_eq!(record.headers.len(), 4, "three of the line's, one added");
        let size = record.key.map_or(0, <[u8]>::len) + record.value.map_or(0, <[u8]>::len);
        Some((allocated, std::hint::black_box(size)))
    };
    // The first round grows the storage to the largest key, value and header.
    for _ in 0..300 {
        assert!(read(&mut input).is_some());
    }
    let (mut records, mut allocated, mut sizes) = (300, 0, 0);
    while let Some((allocations, size)) = read(&mut input) {
        records += 1;
        allocated += allocations;
        sizes += size;
    }
    assert_eq!(records, 300 * rounds, "every line is a record");
    assert_eq!(
        allocated,
        0,
        "allocations while reading {} records",
        records - 300
    );
    assert!(sizes > 0);
}
