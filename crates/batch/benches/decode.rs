//! krec-batch vs kafka-protocol's `RecordBatchDecoder`, side by side on the same bytes, with
//! the floor for each shape: CRC32C of the batch + raw block decompression + a bare walk that
//! reads every record's fields into no output structure.
//!
//! ```text
//! cargo bench -p krec-batch --bench decode
//! python3 crates/batch/benches/report.py   # markdown table from target/criterion
//! ```
//!
//! Every implementation reads every record's key and value and does two header lookups.
//! krec is read the fast way, in place (`next_ref`), as `krec decode` and `krec consume` read
//! it; `benches/iterators.rs` compares that with the by-value iterators. They are separate
//! binaries on purpose: with both paths in one binary the compiler inlined the in-place path
//! differently and it measured slower, which would misstate either.
//! Allocations per warm batch are counted by a counting global allocator and printed at the end.

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;
use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, Compression, DecodeConfig};
use krec_testkit::CountingAllocator;

// Counts on this thread only (no atomics on the allocation path): the bench is one thread.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

use floor::{LOOKUP_A, LOOKUP_B};

/// Text-like values so compression behaves like real payloads.
fn value(i: usize, size: usize) -> Vec<u8> {
    let words = [
        "order", "created", "customer", "id", "amount", "EUR", "status", "pending", "sku",
    ];
    let mut v = Vec::with_capacity(size);
    let mut n = i;
    while v.len() < size {
        v.extend_from_slice(words[n % words.len()].as_bytes());
        v.push(b' ');
        v.extend_from_slice((n % 1000).to_string().as_bytes());
        v.push(b',');
        n = n.wrapping_mul(31).wrapping_add(7);
    }
    v.truncate(size);
    v
}

fn make_batch(records: usize, size: usize, headers: usize, codec: Compression) -> Bytes {
    let mut b = BatchBuilder::new(1_000_000)
        .compression(codec)
        .base_timestamp(1_764_460_800_000);
    for i in 0..records {
        let key = format!("key-{i:08}");
        let trace = format!("{:016x}", i * 7919);
        let seq = (i as u32).to_be_bytes();
        let all: [(&[u8], Option<&[u8]>); 4] = [
            (b"trace-id", Some(trace.as_bytes())),
            (b"source", Some(b"svc-orders")),
            (b"content-type", Some(b"application/json")),
            (b"seq", Some(&seq)),
        ];
        b = b.record(Some(key.as_bytes()), Some(&value(i, size)), &all[..headers]);
    }
    Bytes::from(b.build())
}

fn krec(input: &Bytes, config: &DecodeConfig) -> usize {
    let mut sum = 0;
    let mut walk = BatchWalk::new_shared(input, config);
    while let Some(batch) = walk.next_ref() {
        let batch = batch.unwrap();
        let mut records = batch.records();
        while let Some(r) = records.next_ref() {
            let r = r.unwrap();
            sum += r.key().map_or(0, <[u8]>::len) + r.value().map_or(0, <[u8]>::len);
            let h = r.headers();
            sum += h.get(LOOKUP_A).and_then(|h| h.value).map_or(0, <[u8]>::len);
            sum += h.get(LOOKUP_B).and_then(|h| h.value).map_or(0, <[u8]>::len);
        }
    }
    sum
}

fn kafka_protocol(input: &Bytes) -> usize {
    let (a, b) = (
        StrBytes::from_static_str("trace-id"),
        StrBytes::from_static_str("content-type"),
    );
    let mut buf = input.clone();
    let mut sum = 0;
    // One call decodes one batch; a buffer of several takes several.
    while !buf.is_empty() {
        let set = RecordBatchDecoder::decode(&mut buf).unwrap();
        sum += sum_records(&set.records, &a, &b);
    }
    sum
}

fn sum_records(records: &[kafka_protocol::records::Record], a: &StrBytes, b: &StrBytes) -> usize {
    let mut sum = 0;
    for r in records {
        sum += r.key.as_ref().map_or(0, Bytes::len) + r.value.as_ref().map_or(0, Bytes::len);
        sum += r
            .headers
            .get(a)
            .and_then(Option::as_ref)
            .map_or(0, Bytes::len);
        sum += r
            .headers
            .get(b)
            .and_then(Option::as_ref)
            .map_or(0, Bytes::len);
    }
    sum
}

/// The floor: what any decoder must do, with no output structure, reusing every buffer.
/// Shared with the root crate's `decode_vs_java` bench.
#[path = "support/floor.rs"]
mod floor;

struct Shape {
    records: usize,
    size: usize,
    headers: usize,
    codec: Compression,
}

fn shapes() -> Vec<Shape> {
    let mut out = Vec::new();
    for (records, size) in [(1, 100), (10, 100), (100, 1024), (1000, 100)] {
        for headers in [0, 4] {
            for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
                out.push(Shape {
                    records,
                    size,
                    headers,
                    codec,
                });
            }
        }
    }
    out
}

fn name(s: &Shape) -> String {
    format!("{}x{}B-{}h-{:?}", s.records, s.size, s.headers, s.codec).to_lowercase()
}

fn allocations_per_batch(mut f: impl FnMut() -> usize) -> f64 {
    black_box(f());
    let runs = 50;
    let (_, counts) = ALLOCATOR.during(|| {
        for _ in 0..runs {
            black_box(f());
        }
    });
    counts.allocations as f64 / runs as f64
}

/// `copies` of one batch back to back, as a fetch response or a segment holds them.
fn repeated(batch: &Bytes, copies: usize) -> Bytes {
    Bytes::from(batch.repeat(copies))
}

/// The floor over every batch of `input` (each one's length field says where the next starts).
fn floor_all(input: &[u8]) -> usize {
    let mut sum = 0;
    let mut position = 0;
    while position < input.len() {
        let entry = krec_batch::EntryHeader::peek(&input[position..]).unwrap();
        let end = position + entry.size().unwrap();
        sum += floor::decode(&input[position..end]);
        position = end;
    }
    sum
}

/// `KREC_BENCH_BATCHES`: copies of each batch in one walked buffer (1 when unset).
fn batches_per_walk() -> usize {
    std::env::var("KREC_BENCH_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Best-of-rounds ns per batch for each implementation, measured interleaved so that load
/// from other processes hits all three alike (the machine is shared). With
/// `KREC_BENCH_BATCHES=n` each call decodes `n` copies of the batch in one buffer (one walk,
/// as a fetch response gives them), and the time is divided by `n`: the walk's own setup,
/// which a one-batch buffer charges to its only batch, is then shared.
fn interleaved(shape: &Shape, config: &DecodeConfig) -> [f64; 3] {
    let copies = batches_per_walk();
    let input = repeated(
        &make_batch(shape.records, shape.size, shape.headers, shape.codec),
        copies,
    );
    let expected = krec(&input, config);
    assert_eq!(kafka_protocol(&input), expected, "{}", name(shape));
    assert_eq!(floor_all(&input) > 0, expected > 0);
    let iterations =
        (200_000 / (copies * shape.records * shape.size / 100).max(1)).clamp(20, 20_000);
    let mut best = [f64::MAX; 3];
    // For `perf stat`: time only one implementation (0 krec, 1 kafka-protocol, 2 floor).
    let only: Option<usize> = std::env::var("KREC_BENCH_ONLY")
        .ok()
        .and_then(|v| v.parse().ok());
    // For A/B runs of krec against the floor: kafka-protocol takes most of a run's time.
    let skip_peer = std::env::var_os("KREC_BENCH_NO_PEER").is_some();
    for _ in 0..25 {
        for (slot, best) in best.iter_mut().enumerate() {
            if only.is_some_and(|o| o != slot) || (skip_peer && slot == 1) {
                continue;
            }
            let start = std::time::Instant::now();
            for _ in 0..iterations {
                black_box(match slot {
                    0 => krec(black_box(&input), config),
                    1 => kafka_protocol(black_box(&input)),
                    _ => floor_all(black_box(&input)),
                });
            }
            let ns = start.elapsed().as_nanos() as f64 / (iterations * copies) as f64;
            *best = best.min(ns);
        }
    }
    best
}

fn main() {
    // For `valgrind --tool=callgrind`: run one implementation a fixed number of times.
    if let (Ok(filter), Ok(only), Ok(count)) = (
        std::env::var("KREC_BENCH_INTERLEAVED"),
        std::env::var("KREC_BENCH_ONLY"),
        std::env::var("KREC_BENCH_COUNT"),
    ) {
        let config = DecodeConfig::default();
        let count: usize = count.parse().unwrap();
        let copies = batches_per_walk();
        for shape in shapes().into_iter().filter(|s| name(s).contains(&filter)) {
            let input = repeated(
                &make_batch(shape.records, shape.size, shape.headers, shape.codec),
                copies,
            );
            for _ in 0..count {
                black_box(match only.as_str() {
                    "0" => krec(black_box(&input), &config),
                    "1" => kafka_protocol(black_box(&input)),
                    _ => floor_all(black_box(&input)),
                });
            }
        }
        return;
    }
    if let Some(filter) = std::env::var_os("KREC_BENCH_INTERLEAVED") {
        let filter = filter.to_string_lossy().into_owned();
        let config = DecodeConfig::default();
        println!(
            "shape | krec ns | kafka-protocol ns | floor ns | krec/floor | kafka-protocol/krec"
        );
        for shape in shapes().into_iter().filter(|s| name(s).contains(&filter)) {
            let [k, kp, fl] = interleaved(&shape, &config);
            let (peer, peer_ratio) = if kp == f64::MAX {
                ("-".to_string(), "-".to_string())
            } else {
                (format!("{kp:.0}"), format!("{:.1}", kp / k))
            };
            println!(
                "INTERLEAVED {} | {k:.1} | {peer} | {fl:.1} | {:.2} | {peer_ratio}",
                name(&shape),
                k / fl,
            );
        }
        return;
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(800))
        .sample_size(20)
        .configure_from_args();
    let config = DecodeConfig::default();
    let mut alloc_rows = Vec::new();
    for shape in shapes() {
        let input = make_batch(shape.records, shape.size, shape.headers, shape.codec);
        let expected = krec(&input, &config);
        assert_eq!(kafka_protocol(&input), expected, "{}", name(&shape));
        assert_eq!(floor::decode(&input) > 0, expected > 0);
        let mut group = c.benchmark_group(name(&shape));
        group.throughput(Throughput::Elements(shape.records as u64));
        group.bench_function("krec", |b| b.iter(|| krec(black_box(&input), &config)));
        group.bench_function("kafka-protocol", |b| {
            b.iter(|| kafka_protocol(black_box(&input)))
        });
        group.bench_function("floor", |b| b.iter(|| floor::decode(black_box(&input))));
        group.finish();
        alloc_rows.push((
            name(&shape),
            input.len(),
            allocations_per_batch(|| krec(&input, &config)),
            allocations_per_batch(|| kafka_protocol(&input)),
        ));
    }
    c.final_summary();
    println!("\nallocations per batch (warm): shape, batch bytes, krec, kafka-protocol");
    for (name, bytes, k, kp) in alloc_rows {
        println!("ALLOC {name} {bytes} {k:.1} {kp:.1}");
    }
}
