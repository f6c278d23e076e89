//! The batch writer: 1,000 records of ~200 B with 2 headers encoded into batches, per codec,
//! beside kafka-protocol's `RecordBatchEncoder` on the same records and beside krec's own
//! decoder reading the batches the writer wrote (what encoding costs against decoding).
//!
//! ```text
//! cargo bench -p krec-batch --bench encode
//! ```
//!
//! Two batchings: one batch of all 1,000 records (`batch.size` 1 MiB, as the producer
//! benchmarks run), and the Java client's default `batch.size` of 16 KiB (about 70 records a
//! batch). Throughput is in records; each group's name carries the records' bytes before
//! compression, for MB/s.

use std::hint::black_box;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{Criterion, Throughput};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KpCompression, Record as KpRecord, RecordBatchEncoder, RecordEncodeOptions,
    TimestampType,
};
use krec_batch::{
    restamp, Append, BatchWalk, BatchWriter, Codec, Compression, DecodeConfig, ProducerFields,
    WriteConfig,
};

const RECORDS: usize = 1_000;
const VALUE_SIZE: usize = 160;

/// One record to send: key, value and two headers.
struct Input {
    timestamp: i64,
    key: Vec<u8>,
    value: Vec<u8>,
    headers: [(&'static str, Option<Vec<u8>>); 2],
}

/// Text-like values so compression behaves like real payloads.
fn value(i: usize) -> Vec<u8> {
    let words = [
        "order", "created", "customer", "id", "amount", "EUR", "status", "pending", "sku",
    ];
    let mut v = Vec::with_capacity(VALUE_SIZE);
    let mut n = i;
    while v.len() < VALUE_SIZE {
        v.extend_from_slice(words[n % words.len()].as_bytes());
        v.push(b' ');
        v.extend_from_slice((n % 1000).to_string().as_bytes());
        v.push(b',');
        n = n.wrapping_mul(31).wrapping_add(7);
    }
    v.truncate(VALUE_SIZE);
    v
}

fn inputs() -> Vec<Input> {
    (0..RECORDS)
        .map(|i| Input {
            timestamp: 1_764_460_800_000 + i as i64,
            key: format!("key-{i:08}").into_bytes(),
            value: value(i),
            headers: [
                ("trace-id", Some(format!("{:016x}", i * 7919).into_bytes())),
                ("source", Some(b"svc-orders".to_vec())),
            ],
        })
        .collect()
}

/// Writes every input into batches of `writer`; calls `sink` with each finished batch.
fn write_all(
    writer: &mut BatchWriter,
    codec: Codec,
    inputs: &[Input],
    mut sink: impl FnMut(&[u8]),
) {
    let producer = ProducerFields::idempotent(1, 0, 0);
    writer.reset();
    for input in inputs {
        let append = |writer: &mut BatchWriter| {
            writer
                .try_append(
                    input.timestamp,
                    Some(&input.key),
                    Some(&input.value),
                    &input.headers,
                )
                .unwrap()
        };
        if append(writer) == Append::Full {
            sink(writer.finish(producer, codec).unwrap());
            writer.reset();
            assert!(matches!(append(writer), Append::Appended { .. }));
        }
    }
    sink(writer.finish(producer, codec).unwrap());
}

fn krec_encode(writer: &mut BatchWriter, codec: Codec, inputs: &[Input]) -> usize {
    let mut total = 0;
    write_all(writer, codec, inputs, |batch| total += batch.len());
    total
}

/// The same records as kafka-protocol takes them, split into the batches the writer made.
fn peer_batches(inputs: &[Input], batch_sizes: &[usize]) -> Vec<Vec<KpRecord>> {
    let mut records = inputs.iter().enumerate().map(|(i, input)| {
        let mut headers = kafka_protocol::indexmap::IndexMap::new();
        for (key, value) in &input.headers {
            headers.insert(
                StrBytes::from_static_str(key),
                value.clone().map(Bytes::from),
            );
        }
        KpRecord {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: 1,
            producer_epoch: 0,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32,
            timestamp: input.timestamp,
            key: Some(Bytes::from(input.key.clone())),
            value: Some(Bytes::from(input.value.clone())),
            headers,
        }
    });
    batch_sizes
        .iter()
        .map(|&n| records.by_ref().take(n).collect())
        .collect()
}

fn peer_encode(batches: &[Vec<KpRecord>], codec: Compression, out: &mut BytesMut) -> usize {
    let compression = match codec {
        Compression::Gzip => KpCompression::Gzip,
        Compression::Snappy => KpCompression::Snappy,
        Compression::Lz4 => KpCompression::Lz4,
        Compression::Zstd => KpCompression::Zstd,
        _ => KpCompression::None,
    };
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    out.clear();
    for batch in batches {
        RecordBatchEncoder::encode(out, batch, &options).unwrap();
    }
    out.len()
}

/// Reads every record's key, value and one header, as the decode bench does.
fn krec_decode(input: &[u8], config: &DecodeConfig) -> usize {
    let mut sum = 0;
    let mut walk = BatchWalk::new(input, config);
    while let Some(batch) = walk.next_ref() {
        let mut records = batch.unwrap().records();
        while let Some(record) = records.next_ref() {
            let record = record.unwrap();
            sum += record.key().map_or(0, <[u8]>::len) + record.value().map_or(0, <[u8]>::len);
            sum += record.headers().get(b"trace-id").map_or(0, |h| h.key.len());
        }
    }
    sum
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1000))
        .sample_size(20)
        .configure_from_args();
    let inputs = inputs();
    let config = DecodeConfig::default();
    for (batching, batch_size) in [("1MiB", 1 << 20), ("16KiB", 16 << 10)] {
        let write_config = WriteConfig {
            batch_size,
            ..WriteConfig::default()
        };
        for &compression in Compression::ALL {
            let codec = Codec::new(compression);
            let mut writer = BatchWriter::new(write_config.clone());
            // The writer's batches, kept for the decoder and to split the peer's alike.
            let (mut written, mut sizes, mut raw) = (Vec::new(), Vec::new(), 0);
            write_all(&mut writer, Codec::NONE, &inputs, |batch| {
                raw += batch.len()
            });
            write_all(&mut writer, codec, &inputs, |batch| {
                written.extend_from_slice(batch);
                let read = BatchWalk::new(batch, &config).next().unwrap().unwrap();
                sizes.push(read.record_count() as usize);
            });
            let peer = peer_batches(&inputs, &sizes);
            let mut peer_out = BytesMut::new();
            let name = format!(
                "encode/{}/{batching}/{}-batches/{raw}B-raw/{}B-out",
                compression.name(),
                sizes.len(),
                written.len()
            );
            let mut group = c.benchmark_group(name);
            group.throughput(Throughput::Elements(RECORDS as u64));
            group.bench_function("krec-writer", |b| {
                b.iter(|| krec_encode(&mut writer, codec, black_box(&inputs)))
            });
            group.bench_function("kafka-protocol", |b| {
                b.iter(|| peer_encode(black_box(&peer), compression, &mut peer_out))
            });
            group.bench_function("krec-decode", |b| {
                b.iter(|| krec_decode(black_box(&written), &config))
            });
            group.finish();
        }
    }
    restamp_bench(&mut c, &inputs);
    c.final_summary();
}

/// The shallow copy's re-stamp of a 1 MiB-class batch (the CRC updated from the header's
/// change alone) beside a re-stamp that recomputes the CRC over the whole batch.
fn restamp_bench(c: &mut Criterion, inputs: &[Input]) {
    let mut writer = BatchWriter::new(WriteConfig {
        batch_size: 1 << 20,
        ..WriteConfig::default()
    });
    let mut batch = Vec::new();
    write_all(&mut writer, Codec::NONE, inputs, |b| batch = b.to_vec());
    let mut group = c.benchmark_group(format!("restamp/{}B", batch.len()));
    group.throughput(Throughput::Elements(1));
    let mut sequence = 0;
    group.bench_function("restamp", |b| {
        b.iter(|| {
            sequence += 1;
            let fields = ProducerFields::idempotent(9, 1, sequence);
            restamp(black_box(&mut batch), 100, fields).unwrap();
        })
    });
    group.bench_function("restamp+crc-recompute", |b| {
        b.iter(|| {
            sequence += 1;
            let fields = ProducerFields::idempotent(9, 1, sequence);
            restamp(black_box(&mut batch), 100, fields).unwrap();
            let crc = crc32c::crc32c(&batch[21..]);
            batch[17..21].copy_from_slice(&crc.to_be_bytes());
        })
    });
    group.finish();
}
