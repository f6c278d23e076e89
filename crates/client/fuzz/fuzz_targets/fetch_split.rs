#![no_main]
//! Fetch response splitting: byte 0 picks the Fetch version, the rest is the body; every
//! partition's records must be a slice of the body, and the batch-header scan must stay
//! inside them and agree with itself.

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

mod alloc_bound;

#[global_allocator]
static GLOBAL: krec_testkit::CountingAllocator = krec_testkit::CountingAllocator::new();

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (_, min, max) = krec_client::fuzzing::response_apis()
        .into_iter()
        .find(|&(key, _, _)| key == 1)
        .unwrap();
    let version = min + i16::from(pick) % (max - min + 1);
    let body = Bytes::copy_from_slice(body);
    let before = GLOBAL.thread().bytes;
    let split = krec_client::fuzzing::split_fetch(version, body.clone());
    let used = GLOBAL.thread().bytes - before;
    assert!(used <= alloc_bound::bound(body.len()), "v{version}: {used} bytes");
    let Ok(partitions) = split else {
        return;
    };
    let whole = body.as_ptr_range();
    for p in partitions {
        let records = p.records.as_ptr_range();
        assert!(
            p.records.is_empty() || (whole.start <= records.start && records.end <= whole.end),
            "records of {}/{} are not a slice of the body",
            p.topic,
            p.partition
        );
        match p.scan {
            Ok(scan) => {
                assert!(scan.complete_bytes <= p.records.len());
                assert_eq!(scan.batches == 0, scan.next_offset.is_none());
                assert_eq!(
                    scan.partial.is_none(),
                    scan.complete_bytes == p.records.len(),
                    "{scan:?}"
                );
            }
            Err(bad) => assert!(bad.position < p.records.len()),
        }
    }
});
