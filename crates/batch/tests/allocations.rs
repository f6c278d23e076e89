//! Decoding a warm batch performs zero heap allocations (counted by a counting allocator).

use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, Compression, DecodeConfig, Record};
use krec_testkit::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

/// Reads everything a consumer would: the key, value, offset and two header lookups.
fn touch(record: &Record<'_>) -> usize {
    let headers = record.headers();
    record.key().map_or(0, <[u8]>::len)
        + record.value().map_or(0, <[u8]>::len)
        + headers.get(b"trace-id").map_or(0, |h| h.key.len())
        + headers.get(b"missing").map_or(0, |h| h.key.len())
        + record.offset() as usize
}

/// Every record of `input`, through the by-value iterators.
fn decode(input: &[u8], config: &DecodeConfig) -> usize {
    let mut sum = 0;
    for batch in BatchWalk::new(input, config) {
        for record in batch.unwrap().records() {
            sum += touch(&record.unwrap());
        }
    }
    sum
}

/// The same, through the in-place path (`next_ref`), which reuses one batch's buffer.
fn decode_in_place(input: &[u8], config: &DecodeConfig) -> usize {
    let mut sum = 0;
    let mut walk = BatchWalk::new(input, config);
    while let Some(batch) = walk.next_ref() {
        let mut records = batch.unwrap().records();
        while let Some(record) = records.next_ref() {
            sum += touch(record.unwrap());
        }
    }
    sum
}

fn batch(codec: Compression, records: usize) -> Vec<u8> {
    let value = [b'v'; 100];
    let mut builder = BatchBuilder::new(0).compression(codec);
    for i in 0..records {
        let key = (i as u32).to_be_bytes();
        builder = builder.record(
            Some(&key),
            Some(&value),
            &[
                (b"trace-id", Some(b"0123456789")),
                (b"source", Some(b"bench")),
                (b"type", None),
                (b"seq", Some(&key)),
            ],
        );
    }
    builder.build()
}

#[test]
fn warm_batches_decode_without_allocating() {
    let (probe, counts) = ALLOCATOR.during(|| std::hint::black_box(Vec::<u8>::with_capacity(64)));
    assert!(counts.allocations > 0, "the counting allocator counts");
    drop(probe);
    let config = DecodeConfig::default();
    for codec in [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Snappy,
        Compression::Gzip,
    ] {
        for records in [1, 100, 1000] {
            // Two batches, so the in-place walk reuses the first one's buffer for the second.
            let input = [batch(codec, records), batch(codec, records)].concat();
            for (path, decode) in [
                ("iterator", decode as fn(&[u8], &DecodeConfig) -> usize),
                ("in place", decode_in_place),
            ] {
                let cold = decode(&input, &config);
                let (warm, counts) = ALLOCATOR.during(|| decode(&input, &config));
                assert_eq!(cold, warm);
                assert_eq!(
                    counts.allocations, 0,
                    "{codec:?} x {records} ({path}): allocations on warm batches"
                );
            }
        }
    }
}

#[test]
fn a_copy_of_a_record_does_not_copy_the_heap_index_of_an_earlier_record() {
    // Eleven headers are past the inline index: the first record's lookup builds a heap
    // index, which the record refilled in place keeps until the next wide record. A copy of
    // the second record (one header) must not copy that index.
    let keys: Vec<Vec<u8>> = (0..11).map(|i| format!("h{i}").into_bytes()).collect();
    let many: Vec<(&[u8], Option<&[u8]>)> =
        keys.iter().map(|k| (&k[..], Some(&b"v"[..]))).collect();
    let input = BatchBuilder::new(0)
        .record(Some(b"k"), Some(b"v"), &many)
        .record(Some(b"k"), Some(b"v"), &[(b"one", Some(b"1"))])
        .build();
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&input, &config);
    let batch = walk.next_ref().unwrap().unwrap();
    let mut records = batch.records();
    let wide = records.next_ref().unwrap().unwrap();
    assert_eq!(wide.headers().get(b"h10").unwrap().value, Some(&b"v"[..]));
    let inline = records.next_ref().unwrap().unwrap();
    let (copy, counts) = ALLOCATOR.during(|| inline.clone());
    assert_eq!(
        counts.allocations, 0,
        "allocations copying an inline record"
    );
    assert_eq!(copy.headers().get(b"one").unwrap().value, Some(&b"1"[..]));
    assert_eq!(copy.headers().len(), 1);
}
