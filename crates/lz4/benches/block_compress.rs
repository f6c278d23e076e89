//! LZ4 compression of a producer's batch body, the input `krec produce` compresses in
//! scripts/bench-produce.sh: records of 100-300 B of words with a key and two headers, in
//! RecordBatch v2 wire form, up to `batch.size` (1 MiB). Side by side, over the body's 64 KiB
//! blocks (independent, as Kafka's Java client writes them):
//!
//! - `lz4_flex_table`: `lz4_flex::block::compress_into_with_table` with a kept match table;
//! - `liblz4_fast1`: liblz4 (the `lz4` crate) at acceleration 1, what the Java client's default
//!   `compression.lz4.level` uses (lz4-java's fast compressor);
//! - `krec_frame_pooled`: the whole frame as the batch writer encodes it
//!   (`encode_frame_into_pooled`).
//!
//! The body's record count is printed first: a median divided by it is the compressor's cost
//! per record. By default the records are generated with the script's recipe (its own random
//! numbers); `KREC_LZ4_BENCH_RECORDS=FILE` takes them from the script's input file instead
//! (target/bench-produce/records-small-N.txt, one KEY<TAB>VALUE line per record).
//!
//! ```text
//! cargo bench -p krec-lz4 --bench block_compress
//! ```

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use krec_lz4::{encode_frame_into_pooled, BlockSize, EncodeOptions, PooledBuf};
use lz4_flex::block::{compress_into_with_table, get_maximum_output_size, CompressTable};

mod support;
use support::paired_ratio;

/// `batch.size` in the benchmark, less the batch header.
const BODY_LIMIT: usize = 1024 * 1024 - 61;
const BLOCK: usize = 64 * 1024;
const HEADERS: [(&str, &str); 2] = [
    ("trace-id", "5f0c2d4e-9a51-4f7b-8c1e-3b2a6d7e8f90"),
    ("source", "bench-produce"),
];

/// xorshift64*: the generated records need only be reproducible, not Python's exact numbers.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// KEY<TAB>VALUE lines as scripts/bench-produce.sh writes them for `small` records.
fn generated_lines(count: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = Rng(20261130);
    let mut words: Vec<String> = [
        "order",
        "customer",
        "shipped",
        "invoice",
        "pending",
        "paid",
        "warehouse",
        "item",
        "quantity",
        "price",
        "EUR",
        "USD",
        "berlin",
        "lisbon",
        "osaka",
        "status",
        "created",
        "updated",
        "true",
        "false",
        "null",
        "id",
        "sku",
        "cart",
        "session",
        "region",
    ]
    .iter()
    .map(|w| w.to_string())
    .collect();
    words.extend((0..400).map(|_| format!("{:x}", rng.next() as u32)));
    (0..count)
        .map(|_| {
            let size = 100 + rng.below(201) as usize;
            let mut value = String::new();
            while value.len() < size {
                if !value.is_empty() {
                    value.push(' ');
                }
                value.push_str(&words[rng.below(words.len() as u64) as usize]);
            }
            value.truncate(size);
            let key = format!("key-{}", rng.below(1 << 20));
            (key.into_bytes(), value.into_bytes())
        })
        .collect()
}

fn file_lines(path: &str, count: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .take(count)
        .map(|line| match line.iter().position(|&b| b == b'\t') {
            Some(tab) => (line[..tab].to_vec(), line[tab + 1..].to_vec()),
            None => (Vec::new(), line.to_vec()),
        })
        .collect()
}

fn put_varint(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push(zigzag as u8 | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as i64);
    out.extend_from_slice(bytes);
}

/// The records in v2 wire form, as many as fit the body; returns the body and its count.
fn batch_body(lines: &[(Vec<u8>, Vec<u8>)]) -> (Vec<u8>, usize) {
    let mut body = Vec::with_capacity(BODY_LIMIT);
    let mut record = Vec::new();
    for (index, (key, value)) in lines.iter().enumerate() {
        record.clear();
        record.push(0); // attributes
        put_varint(&mut record, index as i64 / 1000); // timestamp delta, ms
        put_varint(&mut record, index as i64); // offset delta
        put_bytes(&mut record, key);
        put_bytes(&mut record, value);
        put_varint(&mut record, HEADERS.len() as i64);
        for (name, text) in HEADERS {
            put_bytes(&mut record, name.as_bytes());
            put_bytes(&mut record, text.as_bytes());
        }
        let before = body.len();
        put_varint(&mut body, record.len() as i64);
        if body.len() + record.len() > BODY_LIMIT {
            body.truncate(before);
            return (body, index);
        }
        body.extend_from_slice(&record);
    }
    let count = lines.len();
    (body, count)
}

fn bench(c: &mut Criterion) {
    let lines = match std::env::var("KREC_LZ4_BENCH_RECORDS") {
        Ok(path) => file_lines(&path, 10_000),
        Err(_) => generated_lines(10_000),
    };
    let (body, records) = batch_body(&lines);
    let mut target = vec![0u8; get_maximum_output_size(BLOCK)];
    let mut table = CompressTable::large();
    let flex_len: usize = body
        .chunks(BLOCK)
        .map(|b| compress_into_with_table(b, &mut target, &mut table).unwrap())
        .sum();
    let c_len: usize = body
        .chunks(BLOCK)
        .map(|b| lz4::block::compress_to_buffer(b, None, false, &mut target).unwrap())
        .sum();
    println!(
        "body: {} B, {records} records; compressed lz4_flex {flex_len} B, liblz4 {c_len} B",
        body.len()
    );

    let mut flex_target = target.clone();
    let mut flex_table = CompressTable::large();
    let mut flex = || {
        for block in body.chunks(BLOCK) {
            black_box(compress_into_with_table(block, &mut flex_target, &mut flex_table).unwrap());
        }
    };
    let mut c_target = target.clone();
    let mut liblz4 = || {
        for block in body.chunks(BLOCK) {
            let mode = Some(lz4::block::CompressionMode::FAST(1));
            black_box(lz4::block::compress_to_buffer(block, mode, false, &mut c_target).unwrap());
        }
    };
    println!(
        "paired ratio lz4_flex_table/liblz4_fast1: {:.3}",
        paired_ratio(&mut flex, &mut liblz4)
    );
    let options = EncodeOptions {
        block_size: BlockSize::Max64KiB,
        ..EncodeOptions::default()
    };
    let mut frame = || {
        let mut out = PooledBuf::take();
        encode_frame_into_pooled(&body, &options, &mut out);
        black_box(out.len());
    };
    println!(
        "paired ratio krec_frame_pooled/liblz4_fast1: {:.3}",
        paired_ratio(&mut frame, &mut liblz4)
    );

    let mut group = c.benchmark_group("compress_1MiB_body");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("lz4_flex_table", |b| {
        b.iter(|| {
            for block in body.chunks(BLOCK) {
                black_box(compress_into_with_table(block, &mut target, &mut table).unwrap());
            }
        })
    });
    group.bench_function("liblz4_fast1", |b| {
        b.iter(|| {
            for block in body.chunks(BLOCK) {
                let mode = Some(lz4::block::CompressionMode::FAST(1));
                black_box(lz4::block::compress_to_buffer(block, mode, false, &mut target).unwrap());
            }
        })
    });
    group.bench_function("krec_frame_pooled", |b| {
        b.iter(|| {
            let mut out = PooledBuf::take();
            encode_frame_into_pooled(&body, &options, &mut out);
            black_box(out.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
