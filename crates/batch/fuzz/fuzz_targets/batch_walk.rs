//! Walks arbitrary bytes as a fetch response / segment: CRC off so mutations reach the
//! parsers, small limits so bombs are cheap. Nothing may panic; positions must be consistent.
#![no_main]

use krec_batch::{BatchWalk, DecodeConfig, WalkEnd};
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
    while let Some(batch) = walk.next() {
        let Ok(batch) = batch else {
            failed = true;
            continue;
        };
        assert!(batch.position() >= last_position);
        assert_eq!(batch.position() + batch.size(), walk.position());
        last_position = walk.position();
        for record in batch.records() {
            let Ok(record) = record else { break };
            let _ = (
                record.key(),
                record.value(),
                record.offset(),
                record.timestamp(),
            );
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
