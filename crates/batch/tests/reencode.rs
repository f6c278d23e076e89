//! A copy's decisions and its re-encoding: batches from real producers (`tests/data/`) and
//! compacted, LogAppendTime and legacy shapes built here re-encode to batches a broker takes
//! from a producer (count = last offset delta + 1, CreateTime, the same codec, within the size
//! limit) that hold the same records, offsets relative.

use std::path::{Path, PathBuf};

use krec_batch::encode::{BatchBuilder, LegacyBuilder, LegacyMessage, RecordSpec};
use krec_batch::{
    reencode, Batch, BatchWalk, Compression, ControlKind, CopyShape, DecodeConfig, Error, Record,
    ReencodeReason, ReencodedBatch, TimestampType,
};
use serde_json::Value;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// A record's fields, owned: timestamp, key, value, headers.
type Fields = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
);

fn fields(record: &Record<'_>) -> Fields {
    (
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

/// The batches `reencode` hands out for `input`, from `from_offset`, within `max`.
fn reencoded(input: &[u8], from_offset: i64, max: usize) -> Result<Vec<ReencodedBatch>, Error> {
    let mut out = Vec::new();
    reencode(input, from_offset, max, &DecodeConfig::default(), |batch| {
        out.push(batch);
        Ok::<_, Error>(())
    })?;
    Ok(out)
}

/// Checks every batch is one a broker takes from a producer, within `max` bytes, in
/// `compression`, and returns their records, in order.
fn records_of(batches: &[ReencodedBatch], compression: Compression, max: usize) -> Vec<Fields> {
    let config = DecodeConfig::default();
    let mut out = Vec::new();
    for written in batches {
        assert!(
            written.batch.len() <= max,
            "{} > {max}",
            written.batch.len()
        );
        let mut walk = BatchWalk::new(&written.batch, &config);
        let batch = walk
            .next()
            .expect("one batch")
            .expect("decodes, CRC checked");
        assert!(walk.next().is_none());
        walk.end_of_file().unwrap();
        assert_eq!(batch.magic(), 2);
        assert_eq!(batch.compression(), compression);
        assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
        assert_eq!(batch.attributes() & 0x08, 0, "no LogAppendTime bit");
        assert_eq!((batch.base_offset(), batch.producer_id()), (0, -1));
        assert_eq!(batch.record_count(), written.record_count);
        assert_eq!(batch.last_offset() + 1, i64::from(batch.record_count()));
        let records: Vec<_> = batch.records().map(Result::unwrap).collect();
        let offsets: Vec<i64> = records.iter().map(Record::offset).collect();
        assert_eq!(
            offsets,
            (0..i64::from(written.record_count)).collect::<Vec<_>>()
        );
        assert!(written.first_offset <= written.last_offset);
        out.extend(records.iter().map(fields));
    }
    out
}

/// The data records of `input` at or after `from_offset`, as a reader sees them.
fn source_records(input: &[u8], from_offset: i64) -> Vec<Fields> {
    let config = DecodeConfig::default();
    let mut out = Vec::new();
    for batch in BatchWalk::new(input, &config) {
        let batch = batch.unwrap();
        for record in batch.records().from_offset(from_offset) {
            out.push(fields(&record.unwrap()));
        }
    }
    out
}

/// Every batch of every fixture, each re-encoded alone: the same records, each batch one a
/// producer may send, in the codec the batch came in (legacy codecs are the same ones).
#[test]
fn every_fixture_batch_reencodes_to_the_same_records() {
    let config = DecodeConfig::default();
    let mut fixtures = 0;
    for entry in std::fs::read_dir(data_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "bin") {
            continue;
        }
        fixtures += 1;
        let input = std::fs::read(&path).unwrap();
        let mut walk = BatchWalk::new(&input, &config);
        while let Some(summary) = walk.next_summary() {
            let summary = summary.unwrap();
            let bytes = &input[summary.position..][..summary.size];
            let written = reencoded(bytes, 0, 1 << 20).unwrap();
            if summary.control {
                assert!(written.is_empty(), "{path:?}: control batches are left out");
                continue;
            }
            let records = records_of(&written, summary.compression, 1 << 20);
            assert_eq!(
                records,
                source_records(bytes, 0),
                "{path:?} at byte {}",
                summary.position
            );
            assert_eq!(written[0].first_offset, summary.base_offset, "{path:?}");
        }
    }
    assert!(fixtures >= 29, "{fixtures} fixtures");
}

/// librdkafka's LogAppendTime fixture: the copies carry the times the broker reported to the
/// producer (its `.expected.jsonl`), as CreateTime.
#[test]
fn log_append_time_goes_as_the_brokers_times() {
    let input = std::fs::read(data_dir().join("librdkafka-logappendtime.bin")).unwrap();
    let expected_text =
        std::fs::read_to_string(data_dir().join("librdkafka-logappendtime.expected.jsonl"))
            .unwrap();
    let expected: Vec<i64> = expected_text
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["timestamp"]
                .as_i64()
                .unwrap()
        })
        .collect();
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&input, &config);
    let mut times = Vec::new();
    while let Some(summary) = walk.next_summary() {
        let summary = summary.unwrap();
        assert_eq!(summary.timestamp_type, TimestampType::LogAppendTime);
        let shape = CopyShape::Reencode(ReencodeReason::LogAppendTime);
        assert_eq!(summary.copy_shape(summary.base_offset), shape);
        let bytes = &input[summary.position..][..summary.size];
        let written = reencoded(bytes, 0, 1 << 20).unwrap();
        let records = records_of(&written, Compression::Lz4, 1 << 20);
        times.extend(records.iter().map(|(timestamp, ..)| *timestamp));
    }
    assert_eq!(times, expected);
}

/// A batch as the log cleaner leaves it: `kept` of the offset deltas `0..=last_delta`.
fn compacted(base: i64, compression: Compression, last_delta: i32, kept: &[i32]) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base)
        .compression(compression)
        .base_timestamp(1_764_460_800_000)
        .last_offset_delta(last_delta)
        .producer(4, 0, 0);
    for &delta in kept {
        builder = builder.record_spec(RecordSpec {
            offset_delta: delta,
            timestamp_delta: i64::from(delta) * 10 - 5,
            key: Some(format!("key-{delta}").into_bytes()),
            value: (delta % 3 != 0).then(|| vec![delta as u8; 40]),
            headers: vec![
                (b"h".to_vec(), Some(vec![delta as u8])),
                (b"null".to_vec(), None),
            ],
        });
    }
    builder.build()
}

fn summary_of(batch: &[u8]) -> krec_batch::BatchSummary {
    let config = DecodeConfig::default();
    BatchWalk::new(batch, &config)
        .next_summary()
        .unwrap()
        .unwrap()
}

#[test]
fn a_compacted_batch_reencodes_with_contiguous_deltas_in_every_codec() {
    for &codec in Compression::ALL {
        let batch = compacted(1_000, codec, 9, &[0, 3, 4, 8]);
        let summary = summary_of(&batch);
        assert_eq!((summary.record_count, summary.last_offset), (4, 1_009));
        let gaps = CopyShape::Reencode(ReencodeReason::OffsetGaps);
        assert_eq!(summary.copy_shape(1_000), gaps, "{codec:?}");
        let written = reencoded(&batch, 1_000, 1 << 20).unwrap();
        assert_eq!(written.len(), 1);
        assert_eq!(
            (written[0].first_offset, written[0].last_offset),
            (1_000, 1_008)
        );
        let records = records_of(&written, codec, 1 << 20);
        assert_eq!(records, source_records(&batch, 0), "{codec:?}");
    }
}

#[test]
fn a_fetch_inside_a_batch_copies_the_records_from_its_offset() {
    let batch = compacted(50, Compression::Snappy, 9, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let summary = summary_of(&batch);
    assert_eq!(summary.copy_shape(50), CopyShape::Forward);
    let inside = CopyShape::Reencode(ReencodeReason::StartsBeforeFrom);
    assert_eq!(summary.copy_shape(56), inside);
    assert_eq!(summary.copy_shape(59), inside);
    assert_eq!(summary.copy_shape(60), CopyShape::Skip);
    let written = reencoded(&batch, 56, 1 << 20).unwrap();
    assert_eq!((written[0].first_offset, written[0].last_offset), (56, 59));
    let records = records_of(&written, Compression::Snappy, 1 << 20);
    assert_eq!(records, source_records(&batch, 56));
    assert_eq!(records.len(), 4);
    // Compacted and fetched from inside: the records from the offset on, none before.
    let gaps = compacted(50, Compression::None, 9, &[1, 4, 7]);
    let written = reencoded(&gaps, 53, 1 << 20).unwrap();
    assert_eq!((written[0].first_offset, written[0].last_offset), (54, 57));
    assert_eq!(written[0].record_count, 2);
    // Past the last record kept: nothing to write, though the header spans the offset.
    assert!(reencoded(&gaps, 58, 1 << 20).unwrap().is_empty());
}

#[test]
fn what_the_header_says_decides_the_shape() {
    let plain = BatchBuilder::new(7)
        .record(Some(b"k"), Some(b"v"), &[])
        .build();
    assert_eq!(summary_of(&plain).copy_shape(0), CopyShape::Forward);
    assert_eq!(summary_of(&plain).copy_shape(7), CopyShape::Forward);
    let lat = BatchBuilder::new(7)
        .log_append_time(true)
        .record(None, Some(b"v"), &[])
        .build();
    let lat_shape = CopyShape::Reencode(ReencodeReason::LogAppendTime);
    assert_eq!(summary_of(&lat).copy_shape(7), lat_shape);
    let empty = BatchBuilder::new(7).last_offset_delta(4).build();
    assert_eq!(summary_of(&empty).record_count, 0);
    assert_eq!(summary_of(&empty).copy_shape(0), CopyShape::Skip);
    assert!(reencoded(&empty, 0, 1 << 20).unwrap().is_empty());
    let marker = BatchBuilder::new(8)
        .producer(3, 0, -1)
        .control_marker(ControlKind::Commit, 0)
        .build();
    assert_eq!(summary_of(&marker).copy_shape(0), CopyShape::Skip);
    for magic in [0, 1] {
        let legacy = LegacyBuilder::new(magic)
            .message(LegacyMessage {
                offset: 7,
                timestamp: 5,
                key: None,
                value: Some(b"v".to_vec()),
            })
            .build(7);
        let summary = summary_of(&legacy);
        assert_eq!(summary.magic, magic);
        let shape = CopyShape::Reencode(ReencodeReason::LegacyFormat);
        assert_eq!(summary.copy_shape(0), shape);
    }
}

/// Records of `size` bytes each that no codec shrinks (a xorshift stream), so compressing
/// makes a batch larger than its records: what the limit must hold against. The first
/// `zeros` records are zeros instead, which every codec shrinks to almost nothing.
fn incompressible(count: usize, size: usize, compression: Compression) -> Vec<u8> {
    uneven(0, count, size, compression)
}

fn uneven(zeros: usize, count: usize, size: usize, compression: Compression) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut builder = BatchBuilder::new(0).compression(compression);
    for at in 0..count {
        let value: Vec<u8> = (0..size)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if at < zeros {
                    0
                } else {
                    state as u8
                }
            })
            .collect();
        builder = builder.record(Some(b"k"), Some(&value), &[(b"h", Some(b"x"))]);
    }
    builder.log_append_time(true).build()
}

/// The records that compress well come first and fill batches by the source's own ratio;
/// the batches after them, cut by that ratio, come out over the limit and are cut again,
/// from the first record they took.
#[test]
fn a_batch_that_compresses_unevenly_is_cut_within_the_limit() {
    for &codec in &Compression::ALL[1..] {
        let batch = uneven(40, 80, 1_000, codec);
        let written = reencoded(&batch, 0, 8_000).unwrap();
        assert!(
            written[0].record_count > 8,
            "{codec:?}: the zeros by the ratio"
        );
        let records = records_of(&written, codec, 8_000);
        assert_eq!(records, source_records(&batch, 0), "{codec:?}");
        for pair in written.windows(2) {
            assert_eq!(pair[1].first_offset, pair[0].last_offset + 1);
        }
    }
}

#[test]
fn a_batch_over_the_limit_is_cut_into_batches_within_it() {
    for &codec in Compression::ALL {
        for (count, size, max) in [(40, 1_000, 4_096), (300, 100, 2_000), (5, 3_000, 3_300)] {
            let batch = incompressible(count, size, codec);
            let written = reencoded(&batch, 0, max).unwrap();
            assert!(written.len() > 1, "{codec:?}: cut");
            let records = records_of(&written, codec, max);
            let offsets: Vec<i64> = written
                .iter()
                .flat_map(|b| [b.first_offset, b.last_offset])
                .collect();
            let ends: Vec<i64> = written
                .iter()
                .flat_map(|b| {
                    [
                        b.first_offset,
                        b.first_offset + i64::from(b.record_count) - 1,
                    ]
                })
                .collect();
            assert_eq!(
                offsets, ends,
                "no gaps in the source: the ends follow the counts"
            );
            assert_eq!(written[0].first_offset, 0);
            for pair in written.windows(2) {
                assert_eq!(pair[1].first_offset, pair[0].last_offset + 1);
            }
            assert_eq!(records, source_records(&batch, 0), "{codec:?}");
        }
    }
}

#[test]
fn a_record_over_the_limit_alone_is_an_error_naming_its_offset() {
    let mut builder = BatchBuilder::new(300);
    for size in [10, 5_000, 10] {
        builder = builder.record(None, Some(&vec![b'x'; size]), &[]);
    }
    let error = reencoded(&builder.build(), 0, 2_000).unwrap_err();
    assert!(
        matches!(
            error,
            Error::RecordOverBatchLimit {
                offset: 301,
                limit: 2_000,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("offset 301"), "{error}");
    assert!(error.to_string().contains("max.message.bytes"), "{error}");
}

#[test]
fn a_corrupt_batch_is_refused_even_when_the_reader_skips_checksums() {
    let mut batch = compacted(0, Compression::None, 3, &[0, 3]);
    let last = batch.len() - 1;
    batch[last] ^= 0x40;
    let unchecked = DecodeConfig {
        verify_crc: false,
        ..DecodeConfig::default()
    };
    let result = reencode(&batch, 0, 1 << 20, &unchecked, |_| Ok::<_, Error>(()));
    assert!(
        matches!(result, Err(Error::ChecksumMismatch { offset: 0, .. })),
        "{result:?}"
    );
    // A batch cut short is not whole: refused too, nothing written.
    let whole = compacted(0, Compression::None, 3, &[0, 3]);
    let mut calls = 0;
    let cut = reencode(&whole[..whole.len() - 1], 0, 1 << 20, &unchecked, |_| {
        calls += 1;
        Ok::<_, Error>(())
    });
    assert!(matches!(cut, Err(Error::Truncated { .. })), "{cut:?}");
    assert_eq!(calls, 0);
}

#[test]
fn legacy_wrappers_reencode_with_their_times() {
    let config = DecodeConfig::default();
    for codec in [Compression::Gzip, Compression::Lz4] {
        let legacy = LegacyBuilder::new(1)
            .compression(codec)
            .log_append_time(1_700_000_000_123)
            .message(LegacyMessage {
                offset: 0,
                timestamp: 1,
                key: Some(b"a".to_vec()),
                value: None,
            })
            .message(LegacyMessage {
                offset: 1,
                timestamp: 2,
                key: None,
                value: Some(b"b".to_vec()),
            })
            .build(41);
        let written = reencoded(&legacy, 0, 1 << 20).unwrap();
        assert_eq!((written[0].first_offset, written[0].last_offset), (40, 41));
        let records = records_of(&written, codec, 1 << 20);
        let times: Vec<i64> = records.iter().map(|r| r.0).collect();
        assert_eq!(times, [1_700_000_000_123; 2], "the wrapper's time");
        let read: Vec<Fields> = BatchWalk::new(&legacy, &config)
            .flat_map(|b: Result<Batch<'_>, Error>| {
                let b = b.unwrap();
                b.records().map(|r| fields(&r.unwrap())).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(records, read);
    }
}
