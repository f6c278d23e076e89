//! Round trips through the test-side encoder: every codec and framing style, every batch
//! flag, control batches, compaction gaps, empty batches, legacy v0/v1 message sets.

use bytes::Bytes;
use krec_batch::encode::{
    BatchBuilder, LegacyBuilder, LegacyMessage, Lz4Style, RecordSpec, SnappyStyle, ZstdStyle,
};
use krec_batch::{BatchWalk, Compression, ControlKind, DecodeConfig, TimestampType, WalkEnd};

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

type Owned = (
    i64,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
);

fn decode_all(input: &[u8]) -> Vec<Owned> {
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(input, &config);
    let mut out = Vec::new();
    for batch in walk.by_ref() {
        let batch = batch.unwrap();
        for r in batch.records() {
            let r = r.unwrap();
            out.push((
                r.offset(),
                r.timestamp(),
                r.key().map(<[u8]>::to_vec),
                r.value().map(<[u8]>::to_vec),
                r.headers()
                    .iter()
                    .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                    .collect(),
            ));
        }
    }
    assert_eq!(walk.end(), Some(WalkEnd::Complete));
    out
}

fn sample_batch(codec: Compression) -> BatchBuilder {
    BatchBuilder::new(1000)
        .compression(codec)
        .base_timestamp(1_700_000_000_000)
        .record(
            Some(b"k0"),
            Some(b"v0"),
            &[(b"h", Some(b"1")), (b"h", None)],
        )
        .record(None, Some(b"value only"), &[])
        .record(Some(b"tombstone"), None, &[(b"\xff\xfe", Some(b""))])
        .record(Some(b""), Some(&[7u8; 3000]), &[])
}

fn expected_sample() -> Vec<Owned> {
    let ts = 1_700_000_000_000;
    vec![
        (
            1000,
            ts,
            Some(b"k0".to_vec()),
            Some(b"v0".to_vec()),
            vec![(b"h".to_vec(), Some(b"1".to_vec())), (b"h".to_vec(), None)],
        ),
        (1001, ts, None, Some(b"value only".to_vec()), vec![]),
        (
            1002,
            ts,
            Some(b"tombstone".to_vec()),
            None,
            vec![(vec![0xff, 0xfe], Some(vec![]))],
        ),
        (1003, ts, Some(vec![]), Some(vec![7u8; 3000]), vec![]),
    ]
}

#[test]
fn every_codec_round_trips() {
    for codec in CODECS {
        let bytes = sample_batch(codec).build();
        assert_eq!(decode_all(&bytes), expected_sample(), "{codec:?}");
    }
}

#[test]
fn every_framing_style_round_trips() {
    let styles = [
        sample_batch(Compression::Lz4).lz4_style(Lz4Style::Librdkafka),
        sample_batch(Compression::Snappy).snappy_style(SnappyStyle::Raw),
        sample_batch(Compression::Zstd).zstd_style(ZstdStyle::Streamed),
    ];
    for builder in styles {
        assert_eq!(
            decode_all(&builder.build()),
            expected_sample(),
            "{builder:?}"
        );
    }
}

#[test]
fn large_batches_round_trip_with_every_codec() {
    for codec in CODECS {
        let mut builder = BatchBuilder::new(0).compression(codec);
        for i in 0..2000u32 {
            let value = format!("value-{i}-{}", "x".repeat((i % 300) as usize));
            builder = builder.record(Some(&i.to_be_bytes()), Some(value.as_bytes()), &[]);
        }
        let decoded = decode_all(&builder.build());
        assert_eq!(decoded.len(), 2000, "{codec:?}");
        assert_eq!(decoded[1999].0, 1999);
        assert_eq!(
            decoded[1234].3.as_deref(),
            Some(format!("value-1234-{}", "x".repeat(1234 % 300)).as_bytes())
        );
    }
}

#[test]
fn batch_header_fields_are_exposed() {
    let bytes = BatchBuilder::new(42)
        .compression(Compression::Zstd)
        .transactional(true)
        .producer(77, 3, 19)
        .partition_leader_epoch(5)
        .base_timestamp(100)
        .record_spec(RecordSpec {
            offset_delta: 0,
            timestamp_delta: 7,
            value: Some(b"a".to_vec()),
            ..Default::default()
        })
        .record_spec(RecordSpec {
            offset_delta: 1,
            timestamp_delta: -3,
            value: Some(b"b".to_vec()),
            ..Default::default()
        })
        .build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    assert_eq!(batch.base_offset(), 42);
    assert_eq!(batch.last_offset(), 43);
    assert_eq!(batch.next_offset(), 44);
    assert_eq!(batch.magic(), 2);
    assert_eq!(batch.compression(), Compression::Zstd);
    assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
    assert!(batch.is_transactional());
    assert!(!batch.is_control());
    assert_eq!(batch.producer_id(), 77);
    assert_eq!(batch.producer_epoch(), 3);
    assert_eq!(batch.base_sequence(), 19);
    assert_eq!(batch.partition_leader_epoch(), 5);
    assert_eq!(batch.base_timestamp(), 100);
    assert_eq!(batch.max_timestamp(), 107);
    assert_eq!(batch.record_count(), 2);
    assert_eq!(batch.position(), 0);
    assert_eq!(batch.size(), bytes.len());
    let ts: Vec<i64> = batch.records().map(|r| r.unwrap().timestamp()).collect();
    assert_eq!(ts, vec![107, 97], "timestamp deltas are signed varlongs");
}

#[test]
fn log_append_time_gives_every_record_the_max_timestamp() {
    let bytes = BatchBuilder::new(0)
        .log_append_time(true)
        .base_timestamp(10)
        .max_timestamp(999)
        .record(None, Some(b"a"), &[])
        .record(None, Some(b"b"), &[])
        .build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
    for r in batch.records() {
        let r = r.unwrap();
        assert_eq!(r.timestamp(), 999);
        assert_eq!(r.timestamp_type(), TimestampType::LogAppendTime);
    }
}

#[test]
fn control_batches_yield_markers_not_records_and_advance_the_offset() {
    let data = BatchBuilder::new(10)
        .transactional(true)
        .producer(5, 0, 0)
        .record(None, Some(b"in txn"), &[])
        .build();
    let commit = BatchBuilder::new(11)
        .producer(5, 0, -1)
        .base_timestamp(1234)
        .control_marker(ControlKind::Commit, 17)
        .build();
    let abort = BatchBuilder::new(12)
        .compression(Compression::Lz4)
        .control_marker(ControlKind::Abort, 18)
        .build();
    let input = [data, commit, abort].concat();
    let config = DecodeConfig::default();
    let batches: Vec<_> = BatchWalk::new(&input, &config)
        .map(Result::unwrap)
        .collect();
    assert_eq!(batches.len(), 3);
    assert_eq!(batches[0].records().count(), 1);
    assert_eq!(batches[0].control_records().count(), 0);
    assert!(batches[1].is_control());
    assert_eq!(
        batches[1].records().count(),
        0,
        "control records are never data"
    );
    let markers: Vec<_> = batches[1..]
        .iter()
        .flat_map(|b| b.control_records().map(Result::unwrap).collect::<Vec<_>>())
        .collect();
    assert_eq!(markers[0].kind, ControlKind::Commit);
    assert_eq!(markers[0].offset, 11);
    assert_eq!(markers[0].timestamp, 1234);
    assert_eq!(markers[0].coordinator_epoch, Some(17));
    assert_eq!(markers[1].kind, ControlKind::Abort);
    assert_eq!(markers[1].coordinator_epoch, Some(18));
    assert_eq!(batches[2].next_offset(), 13);
}

#[test]
fn other_control_types_are_typed_not_dropped() {
    let bytes = BatchBuilder::new(3)
        .control_marker(ControlKind::Other(2), 0)
        .build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    let markers: Vec<_> = batch.control_records().map(Result::unwrap).collect();
    assert_eq!(markers.len(), 1);
    assert_eq!(markers[0].kind, ControlKind::Other(2));
    assert_eq!(markers[0].coordinator_epoch, None);
}

#[test]
fn compacted_gaps_and_empty_batches_keep_offsets_right() {
    let gappy = BatchBuilder::new(100)
        .record_spec(RecordSpec {
            offset_delta: 0,
            value: Some(b"first".to_vec()),
            ..Default::default()
        })
        .record_spec(RecordSpec {
            offset_delta: 5,
            value: Some(b"sixth".to_vec()),
            ..Default::default()
        })
        .last_offset_delta(9)
        .build();
    let empty = BatchBuilder::new(110).last_offset_delta(4).build();
    let input = [gappy, empty].concat();
    let config = DecodeConfig::default();
    let batches: Vec<_> = BatchWalk::new(&input, &config)
        .map(Result::unwrap)
        .collect();
    let offsets: Vec<i64> = batches[0].records().map(|r| r.unwrap().offset()).collect();
    assert_eq!(offsets, vec![100, 105]);
    assert_eq!(batches[0].next_offset(), 110);
    assert_eq!(batches[1].record_count(), 0);
    assert_eq!(batches[1].records().count(), 0);
    assert_eq!(
        batches[1].next_offset(),
        115,
        "baseOffset + lastOffsetDelta + 1"
    );
}

#[test]
fn delete_horizon_is_reported() {
    let bytes = BatchBuilder::new(0)
        .delete_horizon(true)
        .base_timestamp(5555)
        .record(None, Some(b"x"), &[])
        .build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    assert_eq!(batch.delete_horizon(), Some(5555));
}

#[test]
fn shared_walk_hands_out_zero_copy_bytes() {
    let bytes = Bytes::from(sample_batch(Compression::None).build());
    let config = DecodeConfig::default();
    let batch = BatchWalk::new_shared(&bytes, &config)
        .next()
        .unwrap()
        .unwrap();
    let first = batch.records().next().unwrap().unwrap();
    let value = first.value_bytes().unwrap();
    assert_eq!(&value[..], b"v0");
    let range = bytes.as_ptr() as usize..bytes.as_ptr() as usize + bytes.len();
    assert!(
        range.contains(&(value.as_ptr() as usize)),
        "value_bytes must point into the input"
    );
    // Compressed batches hand out copies with the same contents.
    let compressed = Bytes::from(sample_batch(Compression::Zstd).build());
    let batch = BatchWalk::new_shared(&compressed, &config)
        .next()
        .unwrap()
        .unwrap();
    let first = batch.records().next().unwrap().unwrap();
    assert_eq!(first.key_bytes().as_deref(), Some(&b"k0"[..]));
}

fn legacy_messages(n: i64, base: i64) -> Vec<LegacyMessage> {
    (0..n)
        .map(|i| LegacyMessage {
            offset: base + i,
            timestamp: 1000 + i,
            key: (i % 2 == 0).then(|| format!("k{i}").into_bytes()),
            value: Some(format!("value {i}").into_bytes()),
        })
        .collect()
}

#[test]
fn legacy_uncompressed_messages_decode() {
    for magic in [0u8, 1] {
        let mut builder = LegacyBuilder::new(magic);
        for m in legacy_messages(3, 50) {
            builder = builder.message(m);
        }
        let decoded = decode_all(&builder.build(0));
        let offsets: Vec<i64> = decoded.iter().map(|r| r.0).collect();
        assert_eq!(offsets, vec![50, 51, 52]);
        let ts: Vec<i64> = decoded.iter().map(|r| r.1).collect();
        if magic == 0 {
            assert_eq!(ts, vec![-1, -1, -1]);
        } else {
            assert_eq!(ts, vec![1000, 1001, 1002]);
        }
        assert_eq!(decoded[1].2, None);
        assert_eq!(decoded[2].3.as_deref(), Some(&b"value 2"[..]));
    }
}

#[test]
fn legacy_compressed_wrappers_decode_with_absolute_offsets() {
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        // v1: relative inner offsets 0..3, wrapper at the last absolute offset.
        let mut v1 = LegacyBuilder::new(1).compression(codec);
        for m in legacy_messages(4, 0) {
            v1 = v1.message(m);
        }
        let decoded = decode_all(&v1.build(203));
        let offsets: Vec<i64> = decoded.iter().map(|r| r.0).collect();
        assert_eq!(offsets, vec![200, 201, 202, 203], "{codec:?} v1");
        assert_eq!(decoded[3].1, 1003);
        // v0: absolute inner offsets; LZ4 uses the broken header checksum of that era.
        let mut v0 = LegacyBuilder::new(0).compression(codec);
        for m in legacy_messages(2, 70) {
            v0 = v0.message(m);
        }
        let decoded = decode_all(&v0.build(71));
        let offsets: Vec<i64> = decoded.iter().map(|r| r.0).collect();
        assert_eq!(offsets, vec![70, 71], "{codec:?} v0");
        assert_eq!(decoded[0].1, -1);
    }
}

#[test]
fn legacy_log_append_time_wrapper_stamps_inner_messages() {
    let mut b = LegacyBuilder::new(1)
        .compression(Compression::Gzip)
        .log_append_time(777);
    for m in legacy_messages(2, 0) {
        b = b.message(m);
    }
    let bytes = b.build(9);
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    assert_eq!(batch.magic(), 1);
    assert_eq!(batch.base_offset(), 8);
    assert_eq!(batch.next_offset(), 10);
    for r in batch.records() {
        let r = r.unwrap();
        assert_eq!(
            (r.timestamp(), r.timestamp_type()),
            (777, TimestampType::LogAppendTime)
        );
    }
}

#[test]
fn mixed_magic_input_walks_in_order() {
    let v0 = LegacyBuilder::new(0)
        .message(legacy_messages(1, 0).remove(0))
        .build(0);
    let v1 = LegacyBuilder::new(1)
        .message(legacy_messages(1, 1).remove(0))
        .build(0);
    let v2 = BatchBuilder::new(2).record(None, Some(b"v2"), &[]).build();
    let decoded = decode_all(&[v0, v1, v2].concat());
    let offsets: Vec<i64> = decoded.iter().map(|r| r.0).collect();
    assert_eq!(offsets, vec![0, 1, 2]);
}

#[test]
fn legacy_messages_between_v2_batches_have_no_producer_fields() {
    // Walked in place, each batch is parsed into the one before: a legacy message must not
    // show the producer fields of the v2 batch before it.
    let v2 = || {
        BatchBuilder::new(10)
            .producer(77, 3, 19)
            .partition_leader_epoch(5)
            .record(Some(b"k"), Some(b"v"), &[])
            .build()
    };
    let mut input = v2();
    for codec in [Compression::None, Compression::Gzip] {
        let mut legacy = LegacyBuilder::new(1).compression(codec);
        for m in legacy_messages(2, 0) {
            legacy = legacy.message(m);
        }
        input.extend(legacy.build(20));
        input.extend(v2());
    }
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&input, &config);
    let mut seen = Vec::new();
    while let Some(batch) = walk.next_ref() {
        let b = batch.unwrap();
        seen.push((
            b.magic(),
            b.producer_id(),
            b.producer_epoch(),
            b.base_sequence(),
            b.partition_leader_epoch(),
        ));
    }
    let (v2, legacy) = ((2, 77, 3, 19, 5), (1, -1, -1, -1, -1));
    // Uncompressed, each legacy message is a batch of its own; compressed, one wrapper.
    assert_eq!(seen, [v2, legacy, legacy, v2, legacy, v2]);
}
