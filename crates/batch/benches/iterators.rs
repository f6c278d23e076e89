//! The two ways to read krec-batch, side by side on the same bytes: in place
//! (`BatchWalk::next_ref`, `Records::next_ref`) and through the by-value iterators
//! (`for batch in walk`, `for record in batch.records()`).
//!
//! ```text
//! cargo bench -p krec-batch --bench iterators
//! ```
//!
//! Best of 25 interleaved rounds per shape, ns per batch. Both read every record's key and
//! value and do two header lookups, like `benches/decode.rs`. The in-place numbers here are
//! those of a binary that also holds the iterator path (see `benches/decode.rs` for why that
//! matters).

use std::hint::black_box;
use std::time::Instant;

use bytes::Bytes;
use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, Compression, DecodeConfig, Record};

fn touch(r: &Record<'_>) -> usize {
    let h = r.headers();
    r.key().map_or(0, <[u8]>::len)
        + r.value().map_or(0, <[u8]>::len)
        + h.get(b"trace-id")
            .and_then(|h| h.value)
            .map_or(0, <[u8]>::len)
        + h.get(b"content-type")
            .and_then(|h| h.value)
            .map_or(0, <[u8]>::len)
}

fn in_place(input: &Bytes, config: &DecodeConfig) -> usize {
    let mut sum = 0;
    let mut walk = BatchWalk::new_shared(input, config);
    while let Some(batch) = walk.next_ref() {
        let mut records = batch.unwrap().records();
        while let Some(r) = records.next_ref() {
            sum += touch(r.unwrap());
        }
    }
    sum
}

fn by_value(input: &Bytes, config: &DecodeConfig) -> usize {
    let mut sum = 0;
    for batch in BatchWalk::new_shared(input, config) {
        for r in batch.unwrap().records() {
            sum += touch(&r.unwrap());
        }
    }
    sum
}

fn batch(records: usize, headers: usize, codec: Compression) -> Bytes {
    let mut b = BatchBuilder::new(0).compression(codec);
    for i in 0..records {
        let key = format!("key-{i:08}");
        let trace = format!("{:016x}", i * 7919);
        let value: Vec<u8> = format!("order created {i} amount EUR status pending ")
            .into_bytes()
            .into_iter()
            .cycle()
            .take(100)
            .collect();
        let all: [(&[u8], Option<&[u8]>); 4] = [
            (b"trace-id", Some(trace.as_bytes())),
            (b"source", Some(b"svc-orders")),
            (b"content-type", Some(b"application/json")),
            (b"seq", Some(b"0001")),
        ];
        b = b.record(Some(key.as_bytes()), Some(&value), &all[..headers]);
    }
    Bytes::from(b.build())
}

fn main() {
    let config = DecodeConfig::default();
    println!("shape | in place ns | by value ns | by value / in place");
    for records in [1, 10, 1000] {
        for headers in [0, 4] {
            for codec in [Compression::None, Compression::Lz4] {
                let input = batch(records, headers, codec);
                assert_eq!(in_place(&input, &config), by_value(&input, &config));
                let iterations = (200_000 / records).clamp(20, 20_000);
                let mut best = [f64::MAX; 2];
                for _ in 0..25 {
                    for (slot, best) in best.iter_mut().enumerate() {
                        let start = Instant::now();
                        for _ in 0..iterations {
                            black_box(match slot {
                                0 => in_place(black_box(&input), &config),
                                _ => by_value(black_box(&input), &config),
                            });
                        }
                        let ns = start.elapsed().as_nanos() as f64 / iterations as f64;
                        *best = best.min(ns);
                    }
                }
                println!(
                    "ITERATORS {records}x100b-{headers}h-{codec:?} | {:.0} | {:.0} | {:.2}",
                    best[0],
                    best[1],
                    best[1] / best[0]
                );
            }
        }
    }
}
