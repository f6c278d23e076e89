#![no_main]
//! Fetch answers read as the fetch loop reads them: byte 0 picks the Fetch version (its low
//! seven bits) and whether the answer is to an incremental request (its high bit); the rest is
//! the body, read by a `FetchSession` (`fuzzing::read_fetch`). Every partition's records must
//! be a slice of the body and belong to one session entry, answered once and not also called
//! unchanged; the batch-header scan must stay inside the records and agree with itself.

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
    let version = min + i16::from(pick & 0x7f) % (max - min + 1);
    let incremental = pick & 0x80 != 0;
    let body = Bytes::copy_from_slice(body);
    let before = GLOBAL.thread().bytes;
    let read = krec_client::fuzzing::read_fetch(version, body.clone(), incremental);
    let used = GLOBAL.thread().bytes - before;
    assert!(used <= alloc_bound::bound(body.len()), "v{version}: {used} bytes");
    let Ok(answer) = read else {
        return;
    };
    let entries = krec_client::fuzzing::FETCH_PARTITIONS as usize;
    let mut seen = vec![false; entries];
    for &at in &answer.unchanged {
        assert!(at < entries && !seen[at], "unchanged entry {at} twice or out of range");
        seen[at] = true;
    }
    let whole = body.as_ptr_range();
    for p in answer.partitions {
        assert!(p.entry < entries, "entry {} outside the session", p.entry);
        assert!(!seen[p.entry], "entry {} answered twice or also unchanged", p.entry);
        seen[p.entry] = true;
        assert_eq!(
            (&*p.topic, p.partition as usize),
            (krec_client::fuzzing::FETCH_TOPIC, p.entry),
            "the session names each partition by its entry"
        );
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
