//! A walk lent the caller's decompression buffer (`BatchWalk::with_buffer`) decompresses its
//! v2 batches into that buffer and leaves the thread's pool alone, across uncompressed and
//! legacy batches in between and from one walk to the next. (That it yields the same records
//! is held by `in_place.rs` and `golden.rs`.) Each test runs on a thread of its own, so the
//! pool it looks at is its own.

use krec_batch::encode::{BatchBuilder, LegacyBuilder, LegacyMessage};
use krec_batch::{BatchWalk, Compression, DecodeConfig, DecompressionBuffer};
use krec_lz4::{thread_pool_stats, PoolStats};

/// A v2 batch at `offset` of one record whose value compresses (so LZ4 writes a compressed
/// block, not a stored one that is read in place).
fn v2(offset: i64, codec: Compression) -> Vec<u8> {
    BatchBuilder::new(offset)
        .compression(codec)
        .record(None, Some(&value(offset)), &[])
        .build()
}

fn value(offset: i64) -> Vec<u8> {
    format!("value {offset} ").repeat(40).into_bytes()
}

/// A gzip-compressed v1 wrapper of one message at `offset`.
fn legacy(offset: i64) -> Vec<u8> {
    legacy_with(offset, Compression::Gzip)
}

/// A v1 message at `offset`: a wrapper of one message if `codec` compresses, else the message.
fn legacy_with(offset: i64, codec: Compression) -> Vec<u8> {
    let inner_offset = if codec == Compression::None {
        offset
    } else {
        0
    };
    LegacyBuilder::new(1)
        .compression(codec)
        .message(LegacyMessage {
            offset: inner_offset,
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(value(offset)),
        })
        .build(offset)
}

/// Buffers the thread's pool handed out so far.
fn taken(stats: PoolStats) -> u64 {
    stats.reused + stats.started_empty
}

/// Walks `input` in place, with `buffer` if given; every record's value, and how many buffers
/// the walk took from the pool.
fn walk(input: &[u8], buffer: Option<&mut DecompressionBuffer>) -> (Vec<Vec<u8>>, u64) {
    let config = DecodeConfig::default();
    let before = taken(thread_pool_stats());
    let mut walk = BatchWalk::new(input, &config);
    if let Some(buffer) = buffer {
        walk = walk.with_buffer(buffer);
    }
    let mut values = Vec::new();
    while let Some(batch) = walk.next_ref() {
        let mut records = batch.unwrap().records();
        while let Some(record) = records.next_ref() {
            values.push(record.unwrap().value().unwrap().to_vec());
        }
    }
    assert!(walk.end_of_file().is_ok());
    (values, taken(thread_pool_stats()) - before)
}

fn on_own_thread(test: impl FnOnce() + Send + 'static) {
    std::thread::spawn(test).join().unwrap();
}

#[test]
fn compressed_batches_go_into_the_callers_buffer_not_the_pool() {
    on_own_thread(|| {
        let codecs = [
            Compression::Lz4,
            Compression::None,
            Compression::Zstd,
            Compression::Gzip,
            Compression::None,
            Compression::Snappy,
            Compression::Lz4,
        ];
        let input: Vec<u8> = codecs
            .iter()
            .enumerate()
            .flat_map(|(offset, codec)| v2(offset as i64, *codec))
            .collect();
        let expected: Vec<Vec<u8>> = (0..codecs.len() as i64).map(value).collect();

        // Without a buffer the walk takes one for each run of compressed batches (an
        // uncompressed batch gives the buffer before it back): the contrast that makes the
        // counts below mean something.
        let (values, taken) = walk(&input, None);
        assert!(values == expected);
        assert_eq!(taken, 3);

        let mut buffer = DecompressionBuffer::new();
        for round in 0..3 {
            let before = thread_pool_stats();
            let (values, taken) = walk(&input, Some(&mut buffer));
            assert!(values == expected, "round {round}: values differ");
            assert_eq!(taken, 0, "round {round}: buffers taken from the pool");
            // Nor given to it: each uncompressed batch hands the buffer back to the caller.
            assert_eq!(thread_pool_stats(), before, "round {round}");
            assert!(buffer.capacity() >= expected[0].len(), "round {round}");
        }
    });
}

#[test]
fn a_legacy_wrapper_between_v2_batches_does_not_lose_the_callers_buffer() {
    on_own_thread(|| {
        let input = [
            v2(0, Compression::Lz4),
            legacy(1),
            v2(2, Compression::None),
            v2(3, Compression::Lz4),
            legacy(4),
            v2(5, Compression::None),
            v2(6, Compression::Zstd),
        ]
        .concat();
        let expected: Vec<Vec<u8>> = (0..7).map(value).collect();
        // Each legacy wrapper decompresses into a buffer of its own from the pool: two taken,
        // where a walk without a buffer takes one for every run of compressed batches. (That
        // the caller's buffer itself comes back at a legacy message is held by the next test:
        // here buffers trade places and the counts would not show it.)
        let mut buffer = DecompressionBuffer::new();
        let (values, taken) = walk(&input, Some(&mut buffer));
        assert!(values == expected, "values differ");
        assert_eq!(taken, 2);
        let (values, taken) = walk(&input, None);
        assert!(values == expected, "values differ");
        assert_eq!(taken, 5, "without a buffer");
    });
}

#[test]
fn an_uncompressed_legacy_message_hands_the_callers_buffer_back_for_the_next_batch() {
    on_own_thread(|| {
        let input = [
            v2(0, Compression::Lz4),
            legacy_with(1, Compression::None),
            v2(2, Compression::Lz4),
        ]
        .concat();
        let expected: Vec<Vec<u8>> = (0..3).map(value).collect();
        let mut buffer = DecompressionBuffer::new();
        walk(&input, Some(&mut buffer));
        // Warm: the second walk neither takes a buffer from the pool nor gives one to it, and
        // allocates nothing (had the legacy message dropped the caller's buffer, the last
        // batch would have grown an empty one while the pool kept the old).
        let before = thread_pool_stats();
        let (values, taken) = walk(&input, Some(&mut buffer));
        assert!(values == expected, "values differ");
        assert_eq!(taken, 0);
        assert_eq!(thread_pool_stats(), before);
        assert!(buffer.capacity() >= value(2).len());
    });
}

#[test]
fn a_released_buffer_frees_its_memory_and_stays_usable() {
    on_own_thread(|| {
        let input = v2(0, Compression::Lz4);
        let mut buffer = DecompressionBuffer::default();
        assert_eq!(buffer.capacity(), 0);
        walk(&input, Some(&mut buffer));
        assert!(buffer.capacity() > 0);
        buffer.release();
        assert_eq!(buffer.capacity(), 0);
        // Released into the thread's pool, which a walk without a buffer takes it from.
        assert_eq!(thread_pool_stats().buffers_kept, 1);
        let (values, taken) = walk(&input, Some(&mut buffer));
        assert!(values == [value(0)], "values differ");
        assert_eq!(taken, 0);
        assert!(buffer.capacity() > 0);
    });
}
