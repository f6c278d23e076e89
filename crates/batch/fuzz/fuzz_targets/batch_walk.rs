//! Walks arbitrary bytes as a fetch response / segment: CRC off so mutations reach the
//! parsers, small limits so bombs are cheap. Nothing may panic; positions must be consistent;
//! the in-place walk (`next_ref`) must see exactly what the iterators see.
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
        let Ok(batch) = batch else {
            failed = true;
            by_iterator.push(Seen::Error);
            continue;
        };
        assert!(batch.position() >= last_position);
        assert_eq!(batch.position() + batch.size(), walk.position());
        last_position = walk.position();
        by_iterator.push(Seen::of_batch(&batch));
        for record in batch.records() {
            let Ok(record) = record else {
                by_iterator.push(Seen::Error);
                break;
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
    let mut in_place = Vec::new();
    let mut walk_in_place = BatchWalk::new(data, &config);
    while let Some(batch) = walk_in_place.next_ref() {
        let Ok(batch) = batch else {
            in_place.push(Seen::Error);
            continue;
        };
        in_place.push(Seen::of_batch(batch));
        let mut records = batch.records();
        while let Some(record) = records.next_ref() {
            match record {
                Ok(record) => in_place.push(Seen::of(record)),
                Err(_) => in_place.push(Seen::Error),
            }
        }
    }
    assert_eq!(in_place, by_iterator);
    assert_eq!(walk_in_place.end(), walk.end());
    assert_eq!(walk_in_place.position(), walk.position());
    match walk.end() {
        None => assert!(failed),
        Some(WalkEnd::Complete) => assert_eq!(walk.position(), data.len()),
        Some(WalkEnd::Partial { position, .. }) => {
            assert_eq!(position, walk.position());
            assert!(position < data.len());
            assert!(walk.end_of_file().is_err());
        }
    }
});

/// What a walk saw (owned: compressed records borrow a buffer that goes with their batch),
/// compared between the two ways of walking.
#[derive(Debug, PartialEq)]
enum Seen {
    Batch(usize, i64, u32),
    Record(i64, i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Error,
}

impl Seen {
    fn of_batch(batch: &Batch<'_>) -> Self {
        Seen::Batch(batch.position(), batch.base_offset(), batch.record_count())
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
