//! The shallow copy's seam: a re-stamped batch keeps its records section byte for byte, its
//! CRC verifies (checked by an independent CRC32C implementation too), and a batch that
//! arrived corrupt stays detectably corrupt.

use krec_batch::encode::BatchBuilder;
use krec_batch::{
    restamp, restamped_header, Append, BatchWalk, BatchWriter, Codec, Compression, DecodeConfig,
    Error, ProducerFields, WriteConfig,
};
use proptest::prelude::*;

const HEADER: usize = 61;

fn written(codec: Compression, records: usize) -> Vec<u8> {
    let mut writer = BatchWriter::new(WriteConfig {
        batch_size: 1 << 20,
        ..WriteConfig::default()
    });
    for i in 0..records {
        let key = format!("key-{i}");
        let appended = writer
            .try_append(
                1_000 + i as i64,
                Some(key.as_bytes()),
                Some(&[b'v'; 150][..]),
                &[("trace", Some(&b"abc"[..])), ("seq", Some(key.as_bytes()))],
            )
            .unwrap();
        assert!(matches!(appended, Append::Appended { .. }));
    }
    let producer = ProducerFields::idempotent(11, 1, 7);
    writer.finish(producer, Codec::new(codec)).unwrap().to_vec()
}

fn stored_crc(batch: &[u8]) -> u32 {
    u32::from_be_bytes(batch[17..21].try_into().unwrap())
}

#[test]
fn a_restamped_batch_keeps_its_records_and_its_crc_verifies() {
    let config = DecodeConfig::default();
    let new = ProducerFields {
        transactional: true,
        ..ProducerFields::idempotent(9_000_000_000, 42, 123_456)
    };
    for codec in Compression::ALL.iter().copied() {
        for records in [1, 2, 50, 700] {
            let original = written(codec, records);
            let mut batch = original.clone();
            restamp(&mut batch, 5_000, new).unwrap();
            assert_eq!(&batch[HEADER..], &original[HEADER..], "records untouched");
            assert_eq!(
                stored_crc(&batch),
                crc32c::crc32c(&batch[21..]),
                "{codec:?} x {records}"
            );
            let read = BatchWalk::new(&batch, &config).next().unwrap().unwrap();
            assert_eq!(read.base_offset(), 5_000);
            assert_eq!(read.producer_id(), 9_000_000_000);
            assert_eq!(read.producer_epoch(), 42);
            assert_eq!(read.base_sequence(), 123_456);
            assert!(read.is_transactional());
            assert_eq!(read.compression(), codec);
            let offsets: Vec<i64> = read.records().map(|r| r.unwrap().offset()).collect();
            assert_eq!(offsets, (5_000..5_000 + records as i64).collect::<Vec<_>>());
            // Back to the first stamp: the very bytes written.
            restamp(&mut batch, 0, ProducerFields::idempotent(11, 1, 7)).unwrap();
            assert_eq!(batch, original);
        }
    }
}

#[test]
fn the_header_for_a_vectored_write_is_the_in_place_restamp() {
    let original = written(Compression::Lz4, 30);
    let fields = ProducerFields::idempotent(3, 2, 1);
    let header = restamped_header(&original, 77, fields).unwrap();
    let mut in_place = original.clone();
    restamp(&mut in_place, 77, fields).unwrap();
    assert_eq!(&in_place[..HEADER], &header[..]);
    // A batch from another producer (the test-side builder), not transactional.
    let mut other = BatchBuilder::new(12)
        .producer(5, 5, 5)
        .transactional(true)
        .compression(Compression::Zstd)
        .record(Some(b"k"), None, &[])
        .build();
    restamp(&mut other, 12, ProducerFields::NONE).unwrap();
    assert_eq!(stored_crc(&other), crc32c::crc32c(&other[21..]));
    let config = DecodeConfig::default();
    let read = BatchWalk::new(&other, &config).next().unwrap().unwrap();
    assert!(!read.is_transactional());
    assert_eq!(read.producer_id(), -1);
}

#[test]
fn a_batch_that_arrived_corrupt_stays_corrupt() {
    let mut batch = written(Compression::None, 10);
    let last = batch.len() - 1;
    batch[last] ^= 1;
    restamp(&mut batch, 1, ProducerFields::idempotent(1, 1, 1)).unwrap();
    let config = DecodeConfig::default();
    let result = BatchWalk::new(&batch, &config).next().unwrap();
    assert!(
        matches!(result, Err(Error::ChecksumMismatch { .. })),
        "{result:?}"
    );
}

#[test]
fn what_is_not_one_whole_v2_batch_is_refused_with_a_reason() {
    let batch = written(Compression::None, 3);
    let fields = ProducerFields::NONE;
    let header = |bytes: &[u8]| restamped_header(bytes, 0, fields).unwrap_err();
    assert!(matches!(
        header(&batch[..8]),
        Error::Truncated {
            available: 8,
            needed: None,
            ..
        }
    ));
    let cut = batch.len() - 1;
    assert!(matches!(
        header(&batch[..cut]),
        Error::Truncated { needed: Some(n), .. } if n == batch.len()
    ));
    let two = [batch.clone(), batch.clone()].concat();
    assert!(matches!(
        header(&two),
        Error::InvalidBatchField { field, .. } if field.starts_with("length")
    ));
    let mut legacy = batch.clone();
    legacy[16] = 1;
    assert!(matches!(
        header(&legacy),
        Error::UnsupportedMagic { magic: 1, .. }
    ));
    let mut small = batch.clone();
    small[8..12].copy_from_slice(&10i32.to_be_bytes());
    assert!(matches!(
        header(&small),
        Error::BatchTooSmall { length: 10, .. }
    ));
    let mut negative = batch;
    negative[8..12].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(matches!(header(&negative), Error::BatchTooSmall { .. }));
}

proptest! {
    #[test]
    fn restamp_never_panics_and_changes_nothing_when_it_refuses(
        mut bytes in proptest::collection::vec(any::<u8>(), 0..200),
        base_offset in any::<i64>(),
        id in any::<i64>(),
    ) {
        let before = bytes.clone();
        if restamp(&mut bytes, base_offset, ProducerFields::idempotent(id, 0, 0)).is_err() {
            prop_assert_eq!(bytes, before);
        } else {
            prop_assert_eq!(&bytes[HEADER..], &before[HEADER..]);
        }
    }

    #[test]
    fn a_restamped_crc_is_a_recomputed_crc(
        records in 1usize..40,
        base_offset in any::<i64>(),
        id in any::<i64>(),
        epoch in any::<i16>(),
        sequence in any::<i32>(),
        transactional in any::<bool>(),
    ) {
        let mut batch = written(Compression::None, records);
        let fields = ProducerFields { producer_id: id, producer_epoch: epoch, base_sequence: sequence, transactional };
        restamp(&mut batch, base_offset, fields).unwrap();
        prop_assert_eq!(stored_crc(&batch), crc32c::crc32c(&batch[21..]));
    }
}
