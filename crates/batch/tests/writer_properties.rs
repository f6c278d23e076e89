//! Property: any records, written with any codec, read back through the crate's decoder as
//! they were given; never a panic, whatever the sizes and timestamps.

use krec_batch::{
    Append, BatchWalk, BatchWriter, Codec, Compression, DecodeConfig, ProducerFields, WriteConfig,
};
use proptest::prelude::*;

type Header = (Vec<u8>, Option<Vec<u8>>);
type Sent = (i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<Header>);

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        // Compressible, and long enough for two-byte varints.
        (0usize..400, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
    ]
}

fn record() -> impl Strategy<Value = Sent> {
    (
        any::<i64>(),
        proptest::option::of(bytes()),
        proptest::option::of(bytes()),
        proptest::collection::vec((bytes(), proptest::option::of(bytes())), 0..4),
    )
}

fn codec() -> impl Strategy<Value = Codec> {
    prop_oneof![
        Just(Codec::NONE),
        Just(Codec::SNAPPY),
        (1i32..=9).prop_map(|l| Codec::gzip(l).unwrap()),
        (1i32..=17).prop_map(|l| Codec::lz4(l).unwrap()),
        (-20i32..=6).prop_map(|l| Codec::zstd(l).unwrap()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn whatever_is_written_reads_back(
        records in proptest::collection::vec(record(), 1..30),
        codec in codec(),
        batch_size in 0usize..3_000,
    ) {
        let mut writer = BatchWriter::new(WriteConfig { batch_size, max_record_size: 1 << 20 });
        let config = DecodeConfig::default();
        let mut pending = records.as_slice();
        let mut read = Vec::new();
        while !pending.is_empty() {
            // Fill one batch, finish it, read it back.
            while let Some(((timestamp, key, value, headers), rest)) = pending.split_first() {
                match writer.try_append(*timestamp, key.as_deref(), value.as_deref(), headers).unwrap() {
                    Append::Appended { .. } => pending = rest,
                    Append::Full => break,
                }
            }
            prop_assert!(!writer.is_empty(), "the first record always fits");
            let batch = writer.finish(ProducerFields::NONE, codec).unwrap();
            let first = BatchWalk::new(batch, &config).next().unwrap().unwrap();
            prop_assert_eq!(first.compression(), codec.compression());
            for record in first.records() {
                let record = record.unwrap();
                read.push((
                    record.timestamp(),
                    record.key().map(<[u8]>::to_vec),
                    record.value().map(<[u8]>::to_vec),
                    record.headers().iter().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect::<Vec<_>>(),
                ));
            }
            writer.reset();
        }
        prop_assert_eq!(read, records);
    }
}

#[test]
fn the_property_covers_every_codec() {
    // The strategy above draws from every codec; keep it so when codecs are added.
    assert_eq!(Compression::ALL.len(), 5);
}
