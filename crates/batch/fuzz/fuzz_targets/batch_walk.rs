//! Walks arbitrary bytes as a fetch response / segment: CRC off so mutations reach the
//! parsers, small limits so bombs are cheap. Nothing may panic; positions must be consistent;
//! the in-place walk (`next_ref`), with and without a caller's decompression buffer, must see
//! exactly what the iterators see.
#![no_main]

use krec_batch::{Batch, BatchWalk, DecodeConfig, Record, WalkEnd};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let config = DecodeConfig {
        verify_crc: data.first().is_some_and(|b| b & 1 == 1),
        max_batch_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
        max_records_per_batch: 1 << 16,
    };
    let mut walk = BatchWalk::new(data, &config);
    let mut last_position = 0;
    let mut failed = false;
    let mut by_iterator = Vec::new();
    while let Some(batch) = walk.next() {
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) => {
                failed = true;
                by_iterator.push(Seen::error(&e));
                continue;
            }
        };
        assert!(batch.position() >= last_position);
        assert_eq!(batch.position() + batch.size(), walk.position());
        last_position = walk.position();
        by_iterator.push(Seen::of_batch(&batch));
        for record in batch.records() {
            let record = match record {
                Ok(record) => record,
                Err(e) => {
                    by_iterator.push(Seen::error(&e));
                    break;
                }
            };
            by_iterator.push(Seen::of(&record));
            for header in record.headers().iter() {
                assert!(record.headers().get(header.key).is_some());
            }
        }
        for control in batch.control_records() {
            if control.is_err() {
                break;
            }
        }
    }
    // In place twice: the second walk decompresses into pooled buffers the first gave back,
    // so stale bytes in a reused buffer would show.
    for _ in 0..2 {
        let mut in_place = Vec::new();
        let mut walk_in_place = BatchWalk::new(data, &config);
        while let Some(batch) = walk_in_place.next_ref() {
            let batch = match batch {
                Ok(batch) => batch,
                Err(e) => {
                    in_place.push(Seen::error(&e));
                    continue;
                }
            };
            in_place.push(Seen::of_batch(batch));
            let mut records = batch.records();
            while let Some(record) = records.next_ref() {
                match record {
                    Ok(record) => in_place.push(Seen::of(record)),
                    Err(e) => in_place.push(Seen::error(&e)),
                }
            }
        }
        assert_eq!(in_place, by_iterator);
        assert_eq!(walk_in_place.end(), walk.end());
        assert_eq!(walk_in_place.position(), walk.position());
    }
    match walk.end() {
        None => assert!(failed),
        Some(WalkEnd::Complete) => assert_eq!(walk.position(), data.len()),
        Some(WalkEnd::Partial { position, .. }) => {
            assert_eq!(position, walk.position());
            assert!(position < data.len());
            let truncated = walk.end_of_file().unwrap_err();
            assert_eq!(truncated.position(), Some(position));
            assert!(!truncated.to_string().contains("Some("));
        }
    }
});

/// What a walk saw (owned: compressed records borrow a buffer that goes with their batch),
/// compared between the two ways of walking.
#[derive(Debug, PartialEq)]
enum Seen {
    Batch(
        usize,
        i64,
        u32,
        i16,
        (i64, i16, i32),
        (i64, i64),
        i32,
        usize,
    ),
    Record(
        i64,
        i64,
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ),
    /// The error's message: both walks must report the same error, and every message must
    /// format (no panic in any `Display`) without Rust's `Some(..)` in it.
    Error(String),
}

impl Seen {
    fn of_batch(batch: &Batch<'_>) -> Self {
        Seen::Batch(
            batch.position(),
            batch.base_offset(),
            batch.record_count(),
            batch.attributes(),
            (
                batch.producer_id(),
                batch.producer_epoch(),
                batch.base_sequence(),
            ),
            (batch.base_timestamp(), batch.max_timestamp()),
            batch.partition_leader_epoch(),
            batch.records_bytes().len(),
        )
    }

    fn error(error: &krec_batch::Error) -> Self {
        let message = error.to_string();
        assert!(!message.contains("Some("), "{message}");
        Seen::Error(message)
    }

    fn of(record: &Record<'_>) -> Self {
        Seen::Record(
            record.offset(),
            record.timestamp(),
            record.key().map(<[u8]>::to_vec),
            record.value().map(<[u8]>::to_vec),
            record
                .headers()
                .iter()
                .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                .collect(),
        )
    }
}
