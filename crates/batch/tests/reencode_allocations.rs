//! Re-encoding warm batches performs zero heap allocations, for every codec, cut into several
//! batches or not, v2 or legacy (counted by the testkit's counting allocator): the decoder's
//! and the writer's buffers come from the per-thread pool, and a batch handed out and dropped
//! goes back to it.

use krec_batch::encode::{BatchBuilder, LegacyBuilder, LegacyMessage, RecordSpec};
use krec_batch::{reencode, Compression, DecodeConfig, Error};
use krec_testkit::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

/// A compacted batch: every other offset of 200 kept, with headers; values that compress
/// little (a xorshift stream), so a small limit cuts it whatever the codec.
fn compacted(codec: Compression) -> Vec<u8> {
    let mut builder = BatchBuilder::new(1_000)
        .compression(codec)
        .base_timestamp(1_764_460_800_000);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for delta in (0..200).step_by(2) {
        let value = (0..150)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        builder = builder.record_spec(RecordSpec {
            offset_delta: delta,
            timestamp_delta: i64::from(delta),
            key: Some(format!("key-{delta}").into_bytes()),
            value: Some(value),
            headers: vec![(b"trace".to_vec(), Some(b"abc".to_vec()))],
        });
    }
    builder.build()
}

fn legacy_wrapper(codec: Compression) -> Vec<u8> {
    let mut builder = LegacyBuilder::new(1).compression(codec);
    for offset in 0..50 {
        builder = builder.message(LegacyMessage {
            offset,
            timestamp: 1_700_000_000_000 + offset,
            key: Some(b"k".to_vec()),
            value: Some(vec![b'v'; 100]),
        });
    }
    builder.build(49)
}

/// Re-encodes `input` within `max` bytes; the bytes written and the batches.
fn copy(input: &[u8], max: usize, config: &DecodeConfig) -> (usize, usize) {
    let (mut bytes, mut batches) = (0, 0);
    reencode(input, 0, max, config, |batch| {
        bytes += batch.batch.len();
        batches += 1;
        Ok::<_, Error>(())
    })
    .unwrap();
    (bytes, batches)
}

#[test]
fn warm_batches_are_reencoded_without_allocating() {
    let (probe, counts) = ALLOCATOR.during(|| std::hint::black_box(Vec::<u8>::with_capacity(64)));
    assert!(counts.allocations > 0, "the counting allocator counts");
    drop(probe);
    let config = DecodeConfig::default();
    let mut inputs: Vec<(String, Vec<u8>)> = Compression::ALL
        .iter()
        .map(|&codec| (format!("v2 {codec:?}"), compacted(codec)))
        .collect();
    for codec in [Compression::None, Compression::Gzip, Compression::Lz4] {
        inputs.push((format!("legacy {codec:?}"), legacy_wrapper(codec)));
    }
    for (name, input) in &inputs {
        for max in [1 << 20, 2_000] {
            // Two copies to warm up: the working set is the writer's buffer and the batch
            // handed out, which trade places through the pool batch after batch.
            copy(input, max, &config);
            let cold = copy(input, max, &config);
            let (warm, counts) =
                ALLOCATOR.during(|| (0..3).map(|_| copy(input, max, &config)).max());
            assert_eq!(warm, Some(cold));
            if max < 1 << 20 && !name.starts_with("legacy") {
                assert!(cold.1 > 1, "{name}: cut into several");
            }
            assert_eq!(
                counts.allocations, 0,
                "{name} within {max}: allocations when warm"
            );
        }
    }
}
