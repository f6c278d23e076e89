//! Output formatting throughput: decoded records written as JSON lines, a kcat
//! template and raw values into a discarding sink, next to decode alone and a
//! serde_json baseline writing the same JSON objects.
//!
//! cargo bench -p krec-consumer --bench format

use std::hint::black_box;
use std::io::{self, Write};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, Compression, DecodeConfig};
use krec_cli::format::{OutputFormat, RecordContext, RecordWriter, Template};

const BATCHES: usize = 20;
const RECORDS_PER_BATCH: usize = 500;

/// A segment image of typical records: short text keys, ~120-byte JSON-ish
/// values with a few characters that need escaping, two headers.
fn text_segment() -> Vec<u8> {
    segment(|i| {
        format!(
            "{{\"id\":{i},\"user\":\"user-{}\",\"note\":\"line one\\nline \\\"two\\\"\",\"amount\":{}.{:02},\"currency\":\"EUR\"}}",
            i % 977,
            i * 7 % 10_000,
            i % 100
        )
        .into_bytes()
    })
}

/// The same shape with binary values (the base64 path).
fn binary_segment() -> Vec<u8> {
    segment(|i| {
        (0..120)
            .map(|j| ((i * 31 + j * 17) % 256) as u8 | 0x80)
            .collect()
    })
}

fn segment(value: impl Fn(usize) -> Vec<u8>) -> Vec<u8> {
    let mut data = Vec::new();
    for b in 0..BATCHES {
        let mut builder = BatchBuilder::new((b * RECORDS_PER_BATCH) as i64)
            .base_timestamp(1_764_460_800_000 + b as i64);
        for r in 0..RECORDS_PER_BATCH {
            let i = b * RECORDS_PER_BATCH + r;
            let key = format!("key-{i}");
            let trace = format!("00-{i:032x}-01");
            builder = builder.record(
                Some(key.as_bytes()),
                Some(&value(i)),
                &[
                    (b"traceparent", Some(trace.as_bytes())),
                    (b"source", Some(b"bench")),
                ],
            );
        }
        data.extend(builder.compression(Compression::None).build());
    }
    data
}

/// Decodes `data` and writes every record through `writer`.
fn decode_into<W: Write>(data: &[u8], config: &DecodeConfig, writer: &mut RecordWriter<W>) {
    let ctx = RecordContext::new("orders", 3);
    for batch in BatchWalk::new(data, config) {
        let batch = batch.expect("bench input is valid");
        for record in batch.records() {
            let record = record.expect("bench input is valid");
            writer
                .write_record(&ctx, &record)
                .expect("sink never fails");
        }
    }
    writer.flush().expect("sink never fails");
}

fn bench_formats(c: &mut Criterion) {
    let config = DecodeConfig::default();
    let records = (BATCHES * RECORDS_PER_BATCH) as u64;
    for (name, data) in [("text", text_segment()), ("binary", binary_segment())] {
        let mut group = c.benchmark_group(format!("format/{name}"));
        group.throughput(Throughput::Elements(records));

        group.bench_function("decode_only", |b| {
            b.iter(|| {
                let mut count = 0u64;
                for batch in BatchWalk::new(black_box(&data), &config) {
                    for record in batch.expect("valid").records() {
                        let record = record.expect("valid");
                        count += record.value().map_or(0, |v| v.len() as u64);
                        count += record.headers().len() as u64;
                    }
                }
                count
            })
        });

        let formats = [
            ("json", OutputFormat::Json),
            (
                "template",
                OutputFormat::Template(
                    Template::parse("%t %p %o %T %k %{h:traceparent} %s\\n").expect("valid"),
                ),
            ),
            ("raw", OutputFormat::Raw(Default::default())),
        ];
        for (format_name, format) in formats {
            let mut writer = RecordWriter::new(io::sink(), format);
            group.bench_function(format_name, |b| {
                b.iter(|| decode_into(black_box(&data), &config, &mut writer))
            });
        }

        group.bench_function("serde_json_baseline", |b| {
            let mut out = Vec::with_capacity(1 << 20);
            b.iter(|| {
                for batch in BatchWalk::new(black_box(&data), &config) {
                    for record in batch.expect("valid").records() {
                        let record = record.expect("valid");
                        let headers: Vec<_> = record
                            .headers()
                            .iter()
                            .map(|h| (String::from_utf8_lossy(h.key), lossy(h.value)))
                            .collect();
                        let line = serde_json::json!({
                            "topic": "orders", "partition": 3, "offset": record.offset(),
                            "timestamp": record.timestamp(), "timestamp_type": "create_time",
                            "key": lossy(record.key()), "value": lossy(record.value()),
                            "headers": headers,
                        });
                        serde_json::to_writer(&mut out, &line).expect("vec write");
                        out.push(b'\n');
                        if out.len() >= 1 << 16 {
                            io::sink().write_all(&out).expect("sink");
                            out.clear();
                        }
                    }
                }
            })
        });
        group.finish();
    }
}

/// What a serde_json user would do with bytes: lossy text (not even lossless).
fn lossy(bytes: Option<&[u8]>) -> Option<std::borrow::Cow<'_, str>> {
    bytes.map(String::from_utf8_lossy)
}

criterion_group!(benches, bench_formats);
criterion_main!(benches);
