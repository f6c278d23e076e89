//! The batch writer: what it writes reads back through the crate's own decoder for every
//! codec and level, matches the test-side `BatchBuilder` byte for byte where both write the
//! same thing, and keeps its limits.

use krec_batch::encode::{BatchBuilder, RecordSpec};
use krec_batch::{
    Append, BatchWalk, BatchWriter, Codec, Compression, DecodeConfig, Error, ProducerFields,
    TimestampType, WriteConfig, NO_HEADERS,
};

type Headers = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// A record as the tests give it: timestamp, key, value, headers.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Sent {
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Headers,
}

fn sent(
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&[u8], Option<&[u8]>)],
) -> Sent {
    Sent {
        timestamp,
        key: key.map(<[u8]>::to_vec),
        value: value.map(<[u8]>::to_vec),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect(),
    }
}

/// Keys, values and headers present, null and empty; timestamps out of order and negative.
fn variety() -> Vec<Sent> {
    let big = vec![b'x'; 70_000]; // past one LZ4 block and two xerial chunks
    vec![
        sent(
            1_700_000_000_000,
            Some(b"k1"),
            Some(b"v1"),
            &[(b"trace", Some(b"00-ab"))],
        ),
        sent(1_700_000_000_500, None, Some(b"null key"), &[]),
        sent(1_699_999_999_000, Some(b"tombstone"), None, &[(b"h", None)]),
        sent(1_700_000_000_001, Some(b""), Some(b""), &[(b"", Some(b""))]),
        sent(
            -5,
            None,
            None,
            &[(b"a", Some(b"1")), (b"a", Some(b"2")), (b"b", None)],
        ),
        sent(
            1_700_000_000_002,
            Some(&big[..300]),
            Some(&big),
            &[(b"size", Some(b"big"))],
        ),
    ]
}

fn write(writer: &mut BatchWriter, records: &[Sent]) {
    for record in records {
        let appended = writer
            .try_append(
                record.timestamp,
                record.key.as_deref(),
                record.value.as_deref(),
                &record.headers,
            )
            .unwrap();
        assert!(matches!(appended, Append::Appended { .. }), "{appended:?}");
    }
}

/// Every record of the one batch in `batch`, as sent, after checking the batch's header.
fn read_back(batch: &[u8], codec: Compression, producer: ProducerFields) -> Vec<Sent> {
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(batch, &config);
    let read = walk.next().expect("one batch").expect("a valid batch");
    assert!(walk.next().is_none());
    assert_eq!(read.compression(), codec);
    assert_eq!(read.magic(), 2);
    assert_eq!(read.base_offset(), 0);
    assert_eq!(read.partition_leader_epoch(), -1);
    assert_eq!(read.timestamp_type(), TimestampType::CreateTime);
    assert_eq!(read.producer_id(), producer.producer_id);
    assert_eq!(read.producer_epoch(), producer.producer_epoch);
    assert_eq!(read.base_sequence(), producer.base_sequence);
    assert_eq!(read.is_transactional(), producer.transactional);
    assert!(!read.is_control());
    let mut out = Vec::new();
    for (index, record) in read.records().enumerate() {
        let record = record.expect("a valid record");
        assert_eq!(record.offset(), index as i64);
        out.push(Sent {
            timestamp: record.timestamp(),
            key: record.key().map(<[u8]>::to_vec),
            value: record.value().map(<[u8]>::to_vec),
            headers: record
                .headers()
                .iter()
                .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                .collect(),
        });
    }
    assert_eq!(read.record_count() as usize, out.len());
    assert_eq!(read.last_offset(), out.len() as i64 - 1);
    assert_eq!(read.base_timestamp(), out[0].timestamp);
    assert_eq!(
        read.max_timestamp(),
        out.iter().map(|r| r.timestamp).max().unwrap()
    );
    out
}

fn every_codec() -> Vec<Codec> {
    let mut codecs: Vec<Codec> = Compression::ALL.iter().map(|&c| Codec::new(c)).collect();
    codecs.extend([
        Codec::gzip(1).unwrap(),
        Codec::gzip(9).unwrap(),
        Codec::lz4(1).unwrap(),
        Codec::lz4(17).unwrap(),
        Codec::zstd(-5).unwrap(),
        Codec::zstd(19).unwrap(),
    ]);
    codecs
}

fn big_batches() -> WriteConfig {
    WriteConfig {
        batch_size: 1 << 20,
        ..WriteConfig::default()
    }
}

#[test]
fn every_codec_round_trips_keys_values_headers_nulls_and_empties() {
    let records = variety();
    let producers = [
        ProducerFields::NONE,
        ProducerFields::idempotent(4242, 3, 1_000),
        ProducerFields {
            transactional: true,
            ..ProducerFields::idempotent(i64::MAX, i16::MAX, i32::MAX)
        },
    ];
    let mut writer = BatchWriter::new(big_batches());
    for codec in every_codec() {
        for producer in producers {
            writer.reset();
            write(&mut writer, &records);
            let batch = writer.finish(producer, codec).unwrap().to_vec();
            assert_eq!(
                read_back(&batch, codec.compression(), producer),
                records,
                "{codec:?} {producer:?}"
            );
        }
    }
}

#[test]
fn a_reused_writer_writes_the_same_bytes_as_a_new_one_and_finish_can_be_repeated() {
    let records = variety();
    for codec in every_codec() {
        let mut fresh = BatchWriter::new(big_batches());
        write(&mut fresh, &records);
        let expected = fresh.finish(ProducerFields::NONE, codec).unwrap().to_vec();
        // Finishing twice (with another codec between) gives the same batch again.
        fresh
            .finish(ProducerFields::NONE, Codec::new(Compression::Gzip))
            .unwrap();
        assert_eq!(
            fresh.finish(ProducerFields::NONE, codec).unwrap(),
            &expected[..]
        );
        // A writer that wrote other, larger batches first.
        let mut reused = BatchWriter::new(big_batches());
        for _ in 0..3 {
            write(&mut reused, &[records.clone(), records.clone()].concat());
            reused.finish(ProducerFields::NONE, codec).unwrap();
            reused.reset();
        }
        write(&mut reused, &records);
        let again = reused.finish(ProducerFields::NONE, codec).unwrap();
        assert_eq!(again, &expected[..], "{codec:?}");
        // And one taken as an owned buffer.
        let owned = reused.finish_owned(ProducerFields::NONE, codec).unwrap();
        assert_eq!(&owned[..], &expected[..], "{codec:?}");
        assert!(reused.is_empty());
        assert_eq!(reused.estimated_size(), 61);
    }
}

/// The builder's record list for the same records (timestamp deltas from the first).
fn builder_for(records: &[Sent]) -> BatchBuilder {
    let base = records[0].timestamp;
    let mut builder = BatchBuilder::new(0)
        .base_timestamp(base)
        .max_timestamp(records.iter().map(|r| r.timestamp).max().unwrap());
    for (i, r) in records.iter().enumerate() {
        builder = builder.record_spec(RecordSpec {
            offset_delta: i as i32,
            timestamp_delta: r.timestamp - base,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: r.headers.clone(),
        });
    }
    builder
}

#[test]
fn the_writer_and_the_test_builder_write_the_same_bytes() {
    let records = variety();
    let producer = ProducerFields::idempotent(77, 5, 9);
    // Uncompressed, and the codecs both write the same way: LZ4 as the Java client frames it,
    // snappy in xerial framing.
    for codec in [Compression::None, Compression::Lz4, Compression::Snappy] {
        let expected = builder_for(&records)
            .producer(77, 5, 9)
            .compression(codec)
            .build();
        let mut writer = BatchWriter::new(big_batches());
        write(&mut writer, &records);
        let batch = writer.finish(producer, Codec::new(codec)).unwrap();
        assert_eq!(batch, &expected[..], "{codec:?}");
    }
    // One record, transactional.
    let one = &records[..1];
    let expected = builder_for(one)
        .producer(1, 0, 0)
        .transactional(true)
        .build();
    let mut writer = BatchWriter::new(WriteConfig::default());
    write(&mut writer, one);
    let fields = ProducerFields {
        transactional: true,
        ..ProducerFields::idempotent(1, 0, 0)
    };
    assert_eq!(writer.finish(fields, Codec::NONE).unwrap(), &expected[..]);
}

#[test]
fn a_batch_is_full_past_batch_size_but_its_first_record_always_fits() {
    let config = WriteConfig {
        batch_size: 200,
        max_record_size: 10_000,
    };
    let mut writer = BatchWriter::new(config);
    let value = [b'v'; 50];
    // 61 header bytes, then records of 57 bytes each (length 1, body 56): two fit in 200.
    let mut appended = 0;
    while let Append::Appended { offset_delta } = writer
        .try_append(0, None, Some(&value), NO_HEADERS)
        .unwrap()
    {
        assert_eq!(offset_delta, appended);
        appended += 1;
    }
    assert_eq!(appended, 2);
    assert_eq!(writer.estimated_size(), 61 + 2 * 57);
    assert!(writer.estimated_size() <= 200);
    // Still full, and nothing was written by the refused appends.
    let before = writer.estimated_size();
    assert_eq!(
        writer
            .try_append(0, None, Some(&value), NO_HEADERS)
            .unwrap(),
        Append::Full
    );
    assert_eq!(writer.estimated_size(), before);
    // A record larger than batch.size, alone in an empty batch.
    writer.reset();
    let large = [b'l'; 5_000];
    assert_eq!(
        writer
            .try_append(0, None, Some(&large), NO_HEADERS)
            .unwrap(),
        Append::Appended { offset_delta: 0 }
    );
    assert_eq!(
        writer.try_append(0, None, Some(b"x"), NO_HEADERS).unwrap(),
        Append::Full
    );
    let size = writer.estimated_size();
    let batch = writer.finish(ProducerFields::NONE, Codec::NONE).unwrap();
    assert_eq!(batch.len(), size);
    assert!(batch.len() > 5_000);
}

#[test]
fn a_record_too_large_for_a_batch_of_its_own_is_an_error_with_its_size() {
    let mut writer = BatchWriter::new(WriteConfig {
        batch_size: 100,
        max_record_size: 1_000,
    });
    // 61 + 2 (length) + 1 (attributes) + 1 + 1 (deltas) + 1 (null key) + 2 + 929 + 1 (no
    // headers) = 999; one more value byte is 1000, two are 1001.
    let fits = [0u8; 929];
    assert!(matches!(
        writer.try_append(0, None, Some(&fits), NO_HEADERS),
        Ok(Append::Appended { .. })
    ));
    writer.reset();
    let over = [0u8; 931];
    let error = writer
        .try_append(0, None, Some(&over), NO_HEADERS)
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::RecordTooLarge {
                size: 1001,
                limit: 1000
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "a record of 1001 bytes (in a batch of its own) is over the limit of 1000 bytes \
         (max.request.size)"
    );
    assert_eq!((error.position(), error.offset()), (None, None));
    assert!(writer.is_empty(), "a refused record leaves nothing behind");
    // Also when the batch already holds records: the error, not Full.
    let _ = writer
        .try_append(0, None, Some(b"small"), NO_HEADERS)
        .unwrap();
    assert!(matches!(
        writer.try_append(0, Some(&over), None, NO_HEADERS),
        Err(Error::RecordTooLarge { .. })
    ));
    assert_eq!(writer.record_count(), 1);
}

#[test]
fn an_empty_batch_cannot_be_finished() {
    let mut writer = BatchWriter::new(WriteConfig::default());
    for codec in every_codec() {
        assert!(matches!(
            writer.finish(ProducerFields::NONE, codec),
            Err(Error::EmptyBatch)
        ));
        assert!(matches!(
            writer.finish_owned(ProducerFields::NONE, codec),
            Err(Error::EmptyBatch)
        ));
    }
}

#[test]
fn levels_are_checked_against_kafkas_ranges() {
    for (codec, ok, bad) in [
        (
            Codec::gzip as fn(i32) -> Result<Codec, Error>,
            &[-1, 1, 9][..],
            &[0, 10, -2][..],
        ),
        (Codec::lz4, &[1, 9, 17], &[0, 18, -1]),
        (Codec::zstd, &[-131_072, -1, 0, 3, 22], &[23, -131_073]),
    ] {
        for &level in ok {
            assert!(codec(level).is_ok(), "{level}");
        }
        for &level in bad {
            assert!(
                matches!(codec(level), Err(Error::InvalidCompressionLevel { level: l, .. }) if l == level),
                "{level}"
            );
        }
    }
    assert_eq!(
        Codec::gzip(10).unwrap_err().to_string(),
        "compression.gzip.level 10 is out of range 1..=9 (or -1, the default)"
    );
    assert_eq!(
        Codec::zstd(23).unwrap_err().to_string(),
        "compression.zstd.level 23 is out of range -131072..=22"
    );
    assert_eq!(Codec::new(Compression::Gzip).level(), Some(-1));
    assert_eq!(Codec::new(Compression::Lz4).level(), Some(9));
    assert_eq!(Codec::SNAPPY.level(), None);
}

#[test]
fn higher_levels_compress_text_smaller() {
    let line = b"2026-12-05T01:00:00Z order 12345 created for customer 678 status pending; ";
    let mut writer = BatchWriter::new(big_batches());
    let size = |writer: &mut BatchWriter, codec: Codec| {
        writer.reset();
        for i in 0..500 {
            let value: Vec<u8> = line.iter().map(|b| b ^ (i % 3) as u8).collect();
            let _ = writer
                .try_append(i, None, Some(&value), NO_HEADERS)
                .unwrap();
        }
        writer.finish(ProducerFields::NONE, codec).unwrap().len()
    };
    let fast = size(&mut writer, Codec::gzip(1).unwrap());
    let best = size(&mut writer, Codec::gzip(9).unwrap());
    assert!(best < fast, "gzip 9 ({best}) vs 1 ({fast})");
    let fast = size(&mut writer, Codec::zstd(-50).unwrap());
    let best = size(&mut writer, Codec::zstd(19).unwrap());
    assert!(best < fast, "zstd 19 ({best}) vs -50 ({fast})");
}
