//! Writing records allocates nothing per record: after the writer's buffer
//! exists, JSON, templates and raw output render every record of a segment
//! without touching the heap (counted by a per-thread counting allocator).

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
