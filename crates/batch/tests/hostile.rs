//! Hostile input: every lie a batch can tell is a typed error, never a panic or a big allocation.

use krec_batch::encode::{put_varint, put_varlong, BatchBuilder, LegacyBuilder, LegacyMessage};
use krec_batch::{BatchWalk, Compression, DecodeConfig, Error, Field, LegacyFault};

/// Rebuilds a batch around a hand-written records section (uncompressed or compressed payload).
fn batch_with_payload(count: i32, attributes: i16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0i64.to_be_bytes());
    out.extend_from_slice(&((49 + payload.len()) as i32).to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.push(2);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&attributes.to_be_bytes());
    out.extend_from_slice(&(count.max(1) - 1).to_be_bytes());
    out.extend_from_slice(&[0; 16]); // timestamps
    out.extend_from_slice(&(-1i64).to_be_bytes());
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    out
}

/// First error from walking `input` and reading every record.
fn first_error(input: &[u8], config: &DecodeConfig) -> Error {
    for batch in BatchWalk::new(input, config) {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => return e,
        };
        for r in batch.records() {
            if let Err(e) = r {
                return e;
            }
        }
        for r in batch.control_records() {
            if let Err(e) = r {
                return e;
            }
        }
    }
    panic!("no error for hostile input");
}

fn record_body(fields: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut body = Vec::new();
    fields(&mut body);
    let mut out = Vec::new();
    put_varint(&mut out, body.len() as i32);
    out.extend_from_slice(&body);
    out
}

/// A record's fields before its headers (attributes, zero timestamp and offset deltas, null
/// key and value), then `header_count`.
fn null_key_and_value(b: &mut Vec<u8>, header_count: i32) {
    b.push(0);
    put_varlong(b, 0);
    put_varint(b, 0);
    put_varint(b, -1);
    put_varint(b, -1);
    put_varint(b, header_count);
}

#[test]
fn huge_record_count_is_rejected_before_reading() {
    let config = DecodeConfig::default();
    let bytes = batch_with_payload(i32::MAX, 0, &[]);
    assert!(
        matches!(first_error(&bytes, &config), Error::TooManyRecords { count, .. } if count == i32::MAX as i64)
    );
    // Under the configured limit but more than the bytes can hold.
    let bytes = batch_with_payload(1000, 0, &[0; 70]);
    assert!(matches!(
        first_error(&bytes, &config),
        Error::TooManyRecords { limit: 10, .. }
    ));
    let bytes = batch_with_payload(-5, 0, &[]);
    assert!(matches!(
        first_error(&bytes, &config),
        Error::InvalidBatchField {
            field: "record count",
            value: -5,
            ..
        }
    ));
}

#[test]
fn huge_batch_length_is_rejected_by_the_limit() {
    let mut bytes = BatchBuilder::new(0).record(None, Some(b"x"), &[]).build();
    bytes[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
    let config = DecodeConfig::default();
    assert!(
        matches!(first_error(&bytes, &config), Error::BatchTooLarge { size, .. } if size == i32::MAX as usize + 12)
    );
    bytes[8..12].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(matches!(
        first_error(&bytes, &config),
        Error::BatchTooSmall { length: -1, .. }
    ));
}

#[test]
fn lengths_past_the_end_are_truncation_errors() {
    let payload = record_body(|b| {
        b.push(0);
        put_varlong(b, 0);
        put_varint(b, 0);
        put_varint(b, 1000); // key claims 1000 bytes
        b.extend_from_slice(b"short");
    });
    let err = first_error(
        &batch_with_payload(1, 0, &payload),
        &DecodeConfig::default(),
    );
    assert!(
        matches!(
            err,
            Error::RecordTruncated {
                field: Field::Key,
                needed: 1000,
                record: 0,
                ..
            }
        ),
        "{err}"
    );
    // A record length past the batch end.
    let mut payload = Vec::new();
    put_varint(&mut payload, 500);
    payload.extend_from_slice(&[0; 10]);
    let err = first_error(
        &batch_with_payload(1, 0, &payload),
        &DecodeConfig::default(),
    );
    assert!(
        matches!(
            err,
            Error::RecordTruncated {
                field: Field::RecordLength,
                needed: 500,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn header_lengths_past_the_record_are_named_after_a_short_header() {
    // The first header is short (read on the record reader's short-header path); the second
    // claims more bytes than its record holds, in a one-byte or a two-byte length, in its key
    // or its value. The general reader must name it, where it starts and what it claims.
    for (field, claimed) in [
        (Field::HeaderKey, 20),
        (Field::HeaderValue, 20),
        (Field::HeaderKey, 100),
        (Field::HeaderValue, 100),
    ] {
        let mut at = 0;
        let payload = record_body(|b| {
            null_key_and_value(b, 2);
            put_varint(b, 1);
            b.push(b'a');
            put_varint(b, 1);
            b.push(b'x');
            if field == Field::HeaderValue {
                put_varint(b, 1);
                b.push(b'b');
            }
            put_varint(b, claimed);
            at = b.len();
            b.extend_from_slice(b"yy");
        });
        // The record-length varint takes one byte before the record's own bytes.
        let at = at + 1;
        let err = first_error(
            &batch_with_payload(1, 0, &payload),
            &DecodeConfig::default(),
        );
        match err {
            Error::RecordTruncated {
                field: f,
                at: a,
                needed,
                available: 2,
                record: 0,
                ..
            } if f == field && a == at && needed == claimed as u64 => {}
            other => panic!("{field:?} claiming {claimed}: {other}"),
        }
    }
}

#[test]
fn negative_lengths_other_than_minus_one_are_rejected() {
    type WriteFields = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: [(Field, WriteFields); 4] = [
        (Field::Key, Box::new(|b: &mut Vec<u8>| put_varint(b, -2))),
        (
            Field::Value,
            Box::new(|b: &mut Vec<u8>| {
                put_varint(b, -1);
                put_varint(b, -7);
            }),
        ),
        (
            Field::HeaderCount,
            Box::new(|b: &mut Vec<u8>| {
                put_varint(b, -1);
                put_varint(b, -1);
                put_varint(b, -3);
            }),
        ),
        (
            Field::HeaderKey,
            Box::new(|b: &mut Vec<u8>| {
                put_varint(b, -1);
                put_varint(b, -1);
                put_varint(b, 1);
                put_varint(b, -1); // header keys are never null
                put_varint(b, -1);
            }),
        ),
    ];
    for (field, write) in cases {
        let payload = record_body(|b| {
            b.push(0);
            put_varlong(b, 0);
            put_varint(b, 0);
            write(b);
            // Padding keeps the batch past the minimum-size check so the field is reached.
            b.extend_from_slice(&[0; 8]);
        });
        let err = first_error(
            &batch_with_payload(1, 0, &payload),
            &DecodeConfig::default(),
        );
        assert!(
            matches!(err, Error::InvalidLength { field: f, .. } if f == field),
            "{field:?}: {err}"
        );
    }
}

#[test]
fn header_counts_the_record_cannot_hold_are_rejected_at_the_count() {
    // Each header takes at least two bytes; the 9 bytes after the count hold 4 (and 4 empty
    // headers leave one byte over, an error of another kind).
    for (count, rejected) in [(4, false), (5, true), (1_000_000, true), (i32::MAX, true)] {
        let payload = record_body(|b| {
            null_key_and_value(b, count);
            b.extend_from_slice(&[0; 9]);
        });
        let err = first_error(
            &batch_with_payload(1, 0, &payload),
            &DecodeConfig::default(),
        );
        let at_count = matches!(
            err,
            Error::InvalidLength { field: Field::HeaderCount, length, .. } if length == count as i64
        );
        assert_eq!(at_count, rejected, "count {count}: {err}");
    }
}

#[test]
fn varints_that_never_end_are_rejected() {
    let payload = record_body(|b| {
        b.push(0);
        b.extend_from_slice(&[0xff; 12]); // timestamp delta varlong with no end
    });
    let err = first_error(
        &batch_with_payload(1, 0, &payload),
        &DecodeConfig::default(),
    );
    assert!(matches!(err, Error::BadVarint { record: 0, .. }), "{err}");
    let mut payload = vec![0xff; 8]; // record length varint with no end
    payload.push(0);
    let err = first_error(
        &batch_with_payload(1, 0, &payload),
        &DecodeConfig::default(),
    );
    assert!(matches!(err, Error::BadVarint { .. }), "{err}");
}

#[test]
fn record_length_must_match_the_fields() {
    let mut payload = Vec::new();
    let mut rec = Vec::new();
    BatchBuilder::new(0); // keep the encoder in use for the well-formed part
    krec_batch::encode::RecordSpec {
        value: Some(b"abc".to_vec()),
        ..Default::default()
    }
    .encode(&mut rec);
    // Declare one byte more than the fields use, and supply it.
    let body = &rec[1..];
    put_varint(&mut payload, body.len() as i32 + 1);
    payload.extend_from_slice(body);
    payload.push(0);
    let err = first_error(
        &batch_with_payload(1, 0, &payload),
        &DecodeConfig::default(),
    );
    assert!(
        matches!(err, Error::RecordLengthMismatch { declared, used, .. } if declared == used + 1),
        "{err}"
    );
}

#[test]
fn record_count_must_match_the_records() {
    let too_few = BatchBuilder::new(0)
        .record(None, Some(b"a"), &[])
        .declared_record_count(2)
        .build();
    let err = first_error(&too_few, &DecodeConfig::default());
    // One record of 8 bytes cannot hold two: rejected up front, or when the records run out.
    assert!(
        matches!(
            err,
            Error::RecordCountMismatch {
                declared: 2,
                found: 1,
                ..
            } | Error::TooManyRecords { .. }
        ),
        "{err}"
    );
    let too_many = BatchBuilder::new(0)
        .record(None, Some(b"a"), &[])
        .record(None, Some(b"b"), &[])
        .declared_record_count(1)
        .last_offset_delta(1)
        .build();
    let err = first_error(&too_many, &DecodeConfig::default());
    assert!(
        matches!(err, Error::RecordCountMismatch { declared: 1, found: 1, trailing, .. } if trailing > 0),
        "{err}"
    );
}

#[test]
fn offsets_outside_the_batch_or_backwards_are_rejected() {
    use krec_batch::encode::RecordSpec;
    // The error expected: index of the record, its delta, and the smallest and largest delta
    // it could have had.
    type Expected = (u32, i64, i64, i64);
    // Offset deltas of the records, the batch's last offset delta, the error.
    let cases: [(&[i32], i32, Expected); 5] = [
        // Backwards: the second record repeats the first one's delta.
        (&[1, 1], 1, (1, 1, 2, 1)),
        // Past the batch's last offset delta.
        (&[3], 2, (0, 3, 0, 2)),
        // After a record at the last delta, no further record fits.
        (&[2, 3], 2, (1, 3, 3, 2)),
        // Negative deltas are below every minimum, however the comparison is written.
        (&[-1], 2, (0, -1, 0, 2)),
        (&[i32::MIN], 2, (0, i32::MIN as i64, 0, 2)),
    ];
    for (deltas, last, expected) in cases {
        let mut builder = BatchBuilder::new(0);
        for &offset_delta in deltas {
            builder = builder.record_spec(RecordSpec {
                offset_delta,
                ..Default::default()
            });
        }
        let batch = builder.last_offset_delta(last).build();
        let err = first_error(&batch, &DecodeConfig::default());
        let Error::OffsetOutOfOrder {
            record,
            delta,
            min,
            max,
            ..
        } = err
        else {
            panic!("{deltas:?}: {err}");
        };
        assert_eq!((record, delta, min, max), expected, "{deltas:?}");
    }
}

#[test]
fn crc_mismatch_is_reported_and_can_be_switched_off() {
    let mut bytes = BatchBuilder::new(7)
        .record(None, Some(b"hello"), &[])
        .build();
    let last_value_byte = bytes.len() - 2; // the header count follows the value
    bytes[last_value_byte] ^= 0x01;
    let err = first_error(&bytes, &DecodeConfig::default());
    assert!(
        matches!(
            err,
            Error::ChecksumMismatch {
                offset: 7,
                position: 0,
                ..
            }
        ),
        "{err}"
    );
    let config = DecodeConfig {
        verify_crc: false,
        ..DecodeConfig::default()
    };
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    assert_eq!(
        batch.records().next().unwrap().unwrap().value(),
        Some(&b"helln"[..])
    );
}

#[test]
fn unknown_magic_and_codec_are_rejected() {
    let mut bytes = BatchBuilder::new(0).record(None, Some(b"x"), &[]).build();
    bytes[16] = 3;
    assert!(matches!(
        first_error(&bytes, &DecodeConfig::default()),
        Error::UnsupportedMagic { magic: 3, .. }
    ));
    let bytes = batch_with_payload(1, 5, &[0; 10]);
    assert!(matches!(
        first_error(&bytes, &DecodeConfig::default()),
        Error::UnknownCompression { codec: 5, .. }
    ));
}

#[test]
fn zstd_bomb_is_stopped_at_the_limit() {
    let config = DecodeConfig {
        max_decompressed_bytes: 1 << 20,
        ..DecodeConfig::default()
    };
    let zeros = vec![0u8; 64 << 20];
    // With a content size: rejected from the frame header.
    let with_size = zstd::bulk::compress(&zeros, 3).unwrap();
    assert!(
        with_size.len() < 64 << 10,
        "a real bomb: {} bytes",
        with_size.len()
    );
    let err = first_error(&batch_with_payload(1, 4, &with_size), &config);
    assert!(
        matches!(err, Error::DecompressedTooLarge { codec: Compression::Zstd, limit, .. } if limit == 1 << 20),
        "{err}"
    );
    // Without a content size: stopped while streaming.
    let streamed = krec_batch::encode::compress(
        Compression::Zstd,
        &zeros,
        Default::default(),
        Default::default(),
        krec_batch::encode::ZstdStyle::Streamed,
    );
    let err = first_error(&batch_with_payload(1, 4, &streamed), &config);
    assert!(matches!(err, Error::DecompressedTooLarge { .. }), "{err}");
}

#[test]
fn gzip_and_snappy_bombs_are_stopped_at_the_limit() {
    let config = DecodeConfig {
        max_decompressed_bytes: 1 << 20,
        ..DecodeConfig::default()
    };
    let zeros = vec![0u8; 8 << 20];
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        let payload = krec_batch::encode::compress(
            codec,
            &zeros,
            Default::default(),
            Default::default(),
            Default::default(),
        );
        let err = first_error(&batch_with_payload(1, codec.id() as i16, &payload), &config);
        assert!(
            matches!(err, Error::DecompressedTooLarge { codec: c, .. } if c == codec),
            "{codec:?}: {err}"
        );
    }
}

#[test]
fn lz4_block_that_lies_about_its_size_is_rejected() {
    let data: Vec<u8> = (0..4000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
    let mut frame = krec_lz4::encode_frame(&data, &krec_lz4::EncodeOptions::default());
    // Block size field right after the 7-byte header: claim more bytes than the frame holds.
    let claimed = u32::from_le_bytes(frame[7..11].try_into().unwrap()) & 0x7fff_ffff;
    frame[7..11].copy_from_slice(&(claimed + 100).to_le_bytes());
    let err = first_error(&batch_with_payload(1, 3, &frame), &DecodeConfig::default());
    assert!(
        matches!(
            err,
            Error::Decompression {
                codec: Compression::Lz4,
                ..
            }
        ),
        "{err}"
    );
    // A block claiming more than the 64 KiB block maximum.
    frame[7..11].copy_from_slice(&(1u32 << 20).to_le_bytes());
    let err = first_error(&batch_with_payload(1, 3, &frame), &DecodeConfig::default());
    assert!(
        matches!(
            err,
            Error::Decompression {
                codec: Compression::Lz4,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn corrupt_compressed_payloads_are_errors() {
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let payload = krec_batch::encode::compress(
            codec,
            &[1u8; 500],
            Default::default(),
            Default::default(),
            Default::default(),
        );
        let cut = &payload[..payload.len() / 2];
        let err = first_error(
            &batch_with_payload(1, codec.id() as i16, cut),
            &DecodeConfig::default(),
        );
        assert!(
            matches!(err, Error::Decompression { .. }),
            "{codec:?}: {err}"
        );
    }
}

#[test]
fn legacy_lies_are_errors() {
    let message = LegacyMessage {
        offset: 5,
        timestamp: 1,
        key: None,
        value: Some(b"abc".to_vec()),
    };
    let good = LegacyBuilder::new(1).message(message.clone()).build(0);
    // CRC32 mismatch.
    let mut bad = good.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert!(matches!(
        first_error(&bad, &DecodeConfig::default()),
        Error::ChecksumMismatch { offset: 5, .. }
    ));
    // A value length past the end (with the CRC made right, so the parser sees it).
    let mut bad = good.clone();
    let value_len_at = bad.len() - 3 - 4;
    bad[value_len_at..value_len_at + 4].copy_from_slice(&99i32.to_be_bytes());
    let crc = crc32fast::hash(&bad[16..]);
    bad[12..16].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        first_error(&bad, &DecodeConfig::default()),
        Error::InvalidLegacyMessage { .. }
    ));
    // A compressed wrapper whose inner message is itself compressed.
    let inner = krec_batch::encode::encode_message(1, 1, &message);
    let payload = krec_batch::encode::compress(
        Compression::Gzip,
        &inner,
        Default::default(),
        Default::default(),
        Default::default(),
    );
    let wrapper = krec_batch::encode::encode_message(
        1,
        1,
        &LegacyMessage {
            offset: 5,
            timestamp: 1,
            key: None,
            value: Some(payload),
        },
    );
    let err = first_error(&wrapper, &DecodeConfig::default());
    assert!(
        matches!(
            err,
            Error::InvalidLegacyMessage {
                reason: LegacyFault::NestedCompression,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn errors_carry_position_and_offset() {
    let good = BatchBuilder::new(0).record(None, Some(b"a"), &[]).build();
    let mut bad = BatchBuilder::new(1).record(None, Some(b"b"), &[]).build();
    bad[30] ^= 0xff;
    let input = [good.clone(), bad].concat();
    let err = first_error(&input, &DecodeConfig::default());
    assert_eq!(err.position(), Some(good.len()));
    assert_eq!(err.offset(), Some(1));
    assert!(
        err.to_string().contains(&format!("byte {}", good.len())),
        "{err}"
    );
}

#[test]
fn malformed_control_records_are_errors_and_end_the_iteration() {
    use krec_batch::encode::RecordSpec;
    use krec_batch::ControlKind;
    let bytes = BatchBuilder::new(0)
        .control_marker(ControlKind::Commit, 1)
        .record_spec(RecordSpec {
            offset_delta: 1,
            key: Some(vec![0, 0]), // a control key needs version and type: 4 bytes
            value: Some(vec![0; 6]),
            ..Default::default()
        })
        .control_marker(ControlKind::Abort, 1)
        .build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    let mut markers = batch.control_records();
    assert_eq!(markers.next().unwrap().unwrap().kind, ControlKind::Commit);
    let err = markers.next().unwrap().unwrap_err();
    assert!(
        matches!(err, Error::InvalidControlRecord { record: 1, .. }),
        "{err}"
    );
    assert!(markers.next().is_none(), "no records after an error");
    assert_eq!(
        batch.records().count(),
        0,
        "control batches never yield data records"
    );
}
