//! Chunks built from encoded batches: what they deliver, in place and by value.

use super::*;
use bytes::Bytes;
use krec_batch::encode::BatchBuilder;
use krec_batch::ControlKind;
use krec_client::fetch::AbortedTransaction;
use krec_testkit::CountingAllocator;

/// The crate's unit tests' allocator (`share::acks` counts with it too). It counts per
/// thread, so the other tests running meanwhile do not disturb a count.
#[global_allocator]
pub(crate) static ALLOCATOR: CountingAllocator = CountingAllocator::new();

pub(crate) fn data_batch(
    base: i64,
    producer: i64,
    transactional: bool,
    values: &[&str],
) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base)
        .producer(producer, 0, 0)
        .transactional(transactional);
    for value in values {
        builder = builder.record(Some(b"k"), Some(value.as_bytes()), &[]);
    }
    builder.build()
}

pub(crate) fn marker(offset: i64, producer: i64, kind: ControlKind) -> Vec<u8> {
    BatchBuilder::new(offset)
        .producer(producer, 0, -1)
        .transactional(true)
        .control_marker(kind, 0)
        .build()
}

pub(crate) fn chunk(
    batches: &[Vec<u8>],
    fetch_offset: i64,
    next_offset: i64,
    aborted: &[(i64, i64)],
    read_committed: bool,
) -> PartitionChunk {
    let data = ChunkData {
        fetch_offset,
        next_offset,
        high_watermark: next_offset,
        last_stable_offset: next_offset,
        aborted: aborted
            .iter()
            .map(|&(producer_id, first_offset)| AbortedTransaction {
                producer_id,
                first_offset,
            })
            .collect(),
        records: Bytes::from(batches.concat()),
    };
    PartitionChunk::new(Arc::from("t"), 0, 0, data, read_committed, None)
}

/// The delivered records' offsets and values, read through the iterator of owned batches;
/// reading them in place (`try_for_each_ref`) must give the same records, the same error
/// and the same count of aborted records.
fn values(chunk: &PartitionChunk) -> Result<Vec<(i64, String)>, Error> {
    let value_of = |record: &Record<'_>| {
        (
            record.offset(),
            String::from_utf8(record.value().unwrap().to_vec()).unwrap(),
        )
    };
    let mut owned = chunk.batches();
    let by_iterator = (|| {
        let mut out = Vec::new();
        for batch in owned.by_ref() {
            for record in batch?.records() {
                out.push(value_of(&record?));
            }
        }
        Ok(out)
    })();
    let mut in_place = chunk.batches();
    let mut out = Vec::new();
    let by_ref = in_place
        .try_for_each_ref(|batch| -> Result<_, Error> {
            let mut records = batch.records_in_place();
            while let Some(record) = records.next_ref() {
                out.push(value_of(record?));
            }
            Ok(std::ops::ControlFlow::Continue(()))
        })
        .map(|()| out);
    assert_eq!(
        format!("{by_ref:?}"),
        format!("{by_iterator:?}"),
        "in place and by value differ"
    );
    assert_eq!(in_place.aborted_records(), owned.aborted_records());
    let flat: Result<Vec<_>, Error> = chunk.records().map(|r| r.map(|r| value_of(&r))).collect();
    assert_eq!(
        format!("{flat:?}"),
        format!("{by_iterator:?}"),
        "records() and the batches differ"
    );
    let mut lent = Vec::new();
    let lent = chunk
        .for_each_record(|record| lent.push(value_of(record)))
        .map(|()| lent);
    assert_eq!(
        format!("{lent:?}"),
        format!("{by_iterator:?}"),
        "for_each_record() and the batches differ"
    );
    by_iterator
}

/// Producer 1 commits offsets 0-1, producer 2 aborts 2-3 (marker at 5), producer 1's second
/// transaction 4 commits at 6, with producer 2's abort interleaved.
pub(crate) fn interleaved() -> Vec<Vec<u8>> {
    vec![
        data_batch(0, 1, true, &["a0", "a1"]),
        data_batch(2, 2, true, &["x2", "x3"]),
        data_batch(4, 1, true, &["a4"]),
        marker(5, 2, ControlKind::Abort),
        marker(6, 1, ControlKind::Commit),
        data_batch(7, 3, false, &["plain7"]),
    ]
}

#[test]
fn header_counts_match_what_decoding_delivers() {
    let compressed = BatchBuilder::new(0)
        .producer(1, 0, 0)
        .transactional(true)
        .compression(krec_batch::Compression::Lz4)
        .record(Some(b"k"), Some(b"a0"), &[])
        .record(Some(b"k"), Some(b"a1"), &[])
        .build();
    let mut with_compressed = interleaved();
    with_compressed[0] = compressed;
    for batches in [interleaved(), with_compressed] {
        for fetch_offset in 0..8 {
            for (read_committed, aborted) in [(false, &[][..]), (true, &[(2, 2)][..])] {
                let c = chunk(&batches, fetch_offset, 8, aborted, read_committed);
                let delivered = values(&c).unwrap().len() as u64;
                let counted = c.count_records().unwrap();
                assert_eq!(
                    counted, delivered,
                    "fetch offset {fetch_offset}, {read_committed}"
                );
            }
        }
    }
}

#[test]
fn read_committed_hides_exactly_the_aborted_transaction() {
    let c = chunk(&interleaved(), 0, 8, &[(2, 2)], true);
    let got = values(&c).unwrap();
    let offsets: Vec<i64> = got.iter().map(|(o, _)| *o).collect();
    assert_eq!(offsets, vec![0, 1, 4, 7]);
    let mut walk = c.batches();
    for batch in walk.by_ref() {
        batch.unwrap();
    }
    assert_eq!(walk.aborted_records(), 2);
}

#[test]
fn read_uncommitted_shows_everything() {
    let c = chunk(&interleaved(), 0, 8, &[(2, 2)], false);
    let offsets: Vec<i64> = values(&c).unwrap().iter().map(|(o, _)| *o).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3, 4, 7]);
}

#[test]
fn a_producer_is_aborted_only_from_its_first_offset_until_its_marker() {
    // Producer 2 commits 0, then aborts 2 (marker 3), then commits 4 (marker 5).
    let batches = vec![
        data_batch(0, 2, true, &["c0"]),
        marker(1, 2, ControlKind::Commit),
        data_batch(2, 2, true, &["x2"]),
        marker(3, 2, ControlKind::Abort),
        data_batch(4, 2, true, &["c4"]),
        marker(5, 2, ControlKind::Commit),
    ];
    let c = chunk(&batches, 0, 6, &[(2, 2)], true);
    let offsets: Vec<i64> = values(&c).unwrap().iter().map(|(o, _)| *o).collect();
    assert_eq!(offsets, vec![0, 4]);
}

#[test]
fn records_before_the_fetch_offset_are_not_delivered() {
    let c = chunk(
        &[data_batch(10, -1, false, &["a", "b", "c", "d"])],
        12,
        14,
        &[],
        false,
    );
    let got = values(&c).unwrap();
    assert_eq!(got, vec![(12, "c".to_owned()), (13, "d".to_owned())]);
}

#[test]
fn a_chunk_that_ends_before_its_next_offset_is_a_gap() {
    let c = chunk(&[data_batch(0, -1, false, &["a"])], 0, 5, &[], false);
    let error = values(&c).unwrap_err();
    assert!(
        matches!(
            error,
            Error::OffsetGap {
                expected: 5,
                actual: 1,
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn a_batch_cut_inside_a_chunk_is_an_error_not_a_quiet_end() {
    let whole = data_batch(0, -1, false, &["a"]);
    let second = data_batch(1, -1, false, &["b"]);
    let c = chunk(&[whole.clone(), second[..20].to_vec()], 0, 1, &[], false);
    let error = values(&c).unwrap_err();
    assert!(
        matches!(&error, Error::CutBatch { position, fetch_offset: 0, .. } if *position == whole.len()),
        "{error}"
    );
    // Read again, records() gives the kept record and ends with the same error.
    let again: Vec<_> = c.records().collect();
    assert_eq!(again.len(), 2, "the record, then the error");
    assert!(
        matches!(&again[1], Err(Error::CutBatch { position, .. }) if *position == whole.len()),
        "{:?}",
        again[1]
    );
}

#[test]
fn a_corrupt_batch_names_topic_partition_and_offset() {
    let mut batch = data_batch(0, -1, false, &["a"]);
    let last = batch.len() - 1;
    batch[last] ^= 0xff; // breaks the CRC
    let c = chunk(&[batch], 0, 1, &[], false);
    let error = values(&c).unwrap_err();
    assert!(
        matches!(&error, Error::Decode { topic, partition: 0, fetch_offset: 0, .. } if topic == "t"),
        "{error}"
    );
}

#[test]
fn under_skip_a_corrupt_batch_is_stepped_over_whole_and_counted() {
    let mut crc_flip = data_batch(1, -1, false, &["b1", "b2"]);
    let last = crc_flip.len() - 1;
    crc_flip[last] ^= 0xff;
    // Its CRC is right: only the record iterator finds a record missing, after "c3".
    let count_lie = BatchBuilder::new(3)
        .record(None, Some(b"c3"), &[])
        .record(None, Some(b"c4"), &[])
        .declared_record_count(3)
        .build();
    let batches = [
        data_batch(0, -1, false, &["a0"]),
        crc_flip.clone(),
        count_lie.clone(),
        data_batch(5, -1, false, &["d5"]),
    ];
    let metrics = Arc::new(Metrics::new(std::time::Duration::from_secs(1)));
    let c = chunk(&batches, 0, 6, &[], false).with_metrics(metrics.clone());
    let (mut written, mut skipped) = (Vec::new(), Vec::new());
    c.batches()
        .try_for_each_ref_or_skip(
            OnCorrupt::Skip,
            |batch| -> Result<_, Error> {
                for record in batch.records() {
                    written.push(record?.offset());
                }
                Ok(std::ops::ControlFlow::Continue(()))
            },
            |skip| {
                skipped.push(skip.span);
                Ok(())
            },
        )
        .expect("corrupt batches are skipped");
    assert_eq!(
        written,
        [0, 5],
        "c3 is not written: its batch is skipped whole"
    );
    let first = batches[0].len();
    let span = |position, size, base_offset, last_offset| BatchSpan {
        position,
        size,
        base_offset,
        last_offset,
    };
    assert_eq!(
        skipped,
        [
            span(first, crc_flip.len(), 1, 2),
            span(first + crc_flip.len(), count_lie.len(), 3, 4),
        ]
    );
    let snapshot = metrics.snapshot(Vec::new());
    assert_eq!(
        snapshot.batches_skipped[&crate::TopicPartition::new("t", 0)],
        2
    );
    // The default is to stop at the first one.
    assert!(matches!(values(&c), Err(Error::Decode { .. })));
}

/// The batch's last byte flipped: its CRC fails, its header still reads.
fn corrupted(mut batch: Vec<u8>) -> Vec<u8> {
    *batch.last_mut().unwrap() ^= 0x55;
    batch
}

/// Offsets `try_for_each_ref_or_skip` delivers with `OnCorrupt::Skip`, and the skipped spans.
fn skipping(chunk: &PartitionChunk) -> (Vec<i64>, Vec<(i64, i64)>) {
    let (mut offsets, mut skipped) = (Vec::new(), Vec::new());
    chunk
        .batches()
        .try_for_each_ref_or_skip(
            OnCorrupt::Skip,
            |batch| -> Result<_, Error> {
                let mut records = batch.records_in_place();
                while let Some(record) = records.next_ref() {
                    offsets.push(record?.offset());
                }
                Ok(std::ops::ControlFlow::Continue(()))
            },
            |skip| {
                skipped.push((skip.span.base_offset, skip.span.last_offset));
                Ok(())
            },
        )
        .unwrap();
    (offsets, skipped)
}

#[test]
fn a_skipped_abort_marker_does_not_hide_the_producers_later_commits() {
    // Producer 2 aborts 0-1 (marker 2, corrupt), then commits 3 (marker 4); producer 5
    // aborts 5 (marker 6, corrupt too, but its header now claims another producer).
    let mut stray = marker(6, 5, ControlKind::Abort);
    stray[krec_batch::layout::v2::PRODUCER_ID_AT + 7] ^= 1;
    let batches = vec![
        data_batch(0, 2, true, &["x0", "x1"]),
        corrupted(marker(2, 2, ControlKind::Abort)),
        data_batch(3, 2, true, &["c3"]),
        marker(4, 2, ControlKind::Commit),
        data_batch(5, 5, true, &["x5"]),
        stray,
        data_batch(7, 5, true, &["x7"]),
    ];
    let read_committed = chunk(&batches, 0, 8, &[(2, 0), (5, 5)], true);
    let (offsets, skipped) = skipping(&read_committed);
    assert_eq!(
        offsets,
        [3],
        "producer 2's commit delivered; producer 5 stays aborted"
    );
    assert_eq!(skipped, [(2, 2), (6, 6)]);
}

/// Offsets `for_each_record` lends until `each` says stop: `Some(offset)` breaks there.
fn offsets_until(chunk: &PartitionChunk, stop_at: Option<i64>) -> (Vec<i64>, Result<(), Error>) {
    let mut offsets = Vec::new();
    let walked = chunk.for_each_record(|record| {
        offsets.push(record.offset());
        if Some(record.offset()) == stop_at {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    });
    (offsets, walked)
}

#[test]
fn for_each_record_stops_where_the_closure_says() {
    let c = chunk(&interleaved(), 0, 8, &[(2, 2)], true);
    assert_eq!(offsets_until(&c, None).0, [0, 1, 4, 7]);
    let (offsets, walked) = offsets_until(&c, Some(1));
    assert_eq!(
        offsets,
        [0, 1],
        "nothing after the break, not even the next batch"
    );
    walked.unwrap();
    // The caller's error stops the walk and comes back as it was.
    #[derive(Debug, PartialEq)]
    enum Mine {
        Rejected(i64),
        Krec(String),
    }
    impl From<Error> for Mine {
        fn from(error: Error) -> Self {
            Mine::Krec(error.to_string())
        }
    }
    let mut seen = 0;
    let walked = c.for_each_record(|record| {
        seen += 1;
        match record.offset() {
            4 => Err(Mine::Rejected(4)),
            _ => Ok(()),
        }
    });
    assert_eq!((walked, seen), (Err(Mine::Rejected(4)), 3));
}

#[test]
fn for_each_record_ends_at_a_share_chunks_bound() {
    let batches = [
        data_batch(0, -1, false, &["a0", "a1", "a2"]),
        data_batch(3, -1, false, &["b3", "b4", "b5"]),
    ];
    // A share chunk's acquired range 1..=4: its bytes hold both batches whole.
    let c = chunk(&batches, 1, 6, &[], false).with_until(5);
    let (offsets, walked) = offsets_until(&c, None);
    walked.unwrap();
    assert_eq!(offsets, [1, 2, 3, 4]);
}

/// A compressed batch of `records` records of 100 B values with two headers.
fn compressed_batch(base: i64, codec: krec_batch::Compression, records: usize) -> Vec<u8> {
    let value = [b'v'; 100];
    let mut builder = BatchBuilder::new(base).compression(codec);
    for i in 0..records {
        let key = (i as u32).to_be_bytes();
        let headers: [(&[u8], Option<&[u8]>); 2] =
            [(b"trace-id", Some(b"0123456789")), (b"seq", Some(&key))];
        builder = builder.record(Some(&key), Some(&value), &headers);
    }
    builder.build()
}

#[test]
fn for_each_record_over_warm_compressed_batches_allocates_nothing() {
    use krec_batch::Compression;
    let (probe, counts) = ALLOCATOR.during(|| std::hint::black_box(Vec::<u8>::with_capacity(64)));
    assert!(counts.allocations > 0, "the counting allocator counts");
    drop(probe);
    for codec in [
        Compression::Lz4,
        Compression::Zstd,
        Compression::Snappy,
        Compression::Gzip,
    ] {
        // Batches of several sizes, so one reused buffer must serve them all.
        let batches: Vec<Vec<u8>> = [(0, 100), (100, 1000), (1100, 1), (1101, 300)]
            .iter()
            .map(|&(base, records)| compressed_batch(base, codec, records))
            .collect();
        let c = chunk(&batches, 0, 1401, &[], false);
        let touch = |sum: &mut usize, record: &Record<'_>| {
            *sum += record.value().map_or(0, <[u8]>::len)
                + record.headers().get(b"trace-id").map_or(0, |h| h.key.len())
                + record.offset() as usize;
        };
        let mut cold = 0;
        c.for_each_record(|record| touch(&mut cold, record))
            .unwrap();
        let mut warm = 0;
        let (walked, counts) = ALLOCATOR.during(|| c.for_each_record(|r| touch(&mut warm, r)));
        walked.unwrap();
        assert_eq!(cold, warm);
        assert_eq!(
            counts.allocations, 0,
            "{codec:?}: allocations walking warm batches"
        );
    }
}
