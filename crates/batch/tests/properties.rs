//! Property tests: encode-decode round trips, never panicking on arbitrary or mutated bytes,
//! and partial trailing batches at every cut point.

use krec_batch::encode::{BatchBuilder, RecordSpec};
use krec_batch::{BatchWalk, Compression, DecodeConfig, WalkEnd};
use proptest::prelude::*;

type Hdrs = Vec<(Vec<u8>, Option<Vec<u8>>)>;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn record() -> impl Strategy<Value = (i64, u8, Option<Vec<u8>>, Option<Vec<u8>>, Hdrs)> {
    (
        any::<i64>(),
        0u8..4,
        proptest::option::of(bytes(40)),
        proptest::option::of(bytes(300)),
        proptest::collection::vec(
            (header_bytes(), proptest::option::of(header_bytes())),
            0..20,
        ),
    )
}

/// Header keys and values: mostly short, sometimes 64 bytes or more (a two-byte length), so
/// that records mix the headers the record reader indexes on its short-header path with those
/// it hands to the general reader.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![4 => bytes(8), 1 => bytes(100)]
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Gzip),
        Just(Compression::Snappy),
        Just(Compression::Lz4),
        Just(Compression::Zstd),
    ]
}

/// Walks everything, touching every field, and never panics.
fn consume(input: &[u8], config: &DecodeConfig) -> usize {
    let mut seen = 0;
    for batch in BatchWalk::new(input, config) {
        let Ok(batch) = batch else { break };
        for r in batch.records() {
            let Ok(r) = r else { break };
            seen += r.key().map_or(0, |k| k.len()) + r.value().map_or(0, |v| v.len());
            seen += r.headers().iter().count();
            seen += r.headers().get(b"a").is_some() as usize;
        }
        seen += batch.control_records().filter(Result::is_ok).count();
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn records_round_trip(
        base_offset in 0i64..1 << 40,
        base_timestamp in any::<i64>(),
        codec in codec(),
        records in proptest::collection::vec(record(), 0..30),
    ) {
        let mut builder = BatchBuilder::new(base_offset).compression(codec).base_timestamp(base_timestamp);
        let mut delta = 0i32;
        let mut specs = Vec::new();
        for (ts, gap, key, value, headers) in records {
            delta += gap as i32;
            let spec = RecordSpec { offset_delta: delta, timestamp_delta: ts, key, value, headers };
            delta += 1;
            builder = builder.record_spec(spec.clone());
            specs.push(spec);
        }
        let bytes = builder.build();
        let config = DecodeConfig::default();
        let mut walk = BatchWalk::new(&bytes, &config);
        let batch = walk.next().unwrap().unwrap();
        let decoded: Vec<_> = batch.records().map(Result::unwrap).collect();
        prop_assert_eq!(decoded.len(), specs.len());
        for (r, s) in decoded.iter().zip(&specs) {
            prop_assert_eq!(r.offset(), base_offset + s.offset_delta as i64);
            prop_assert_eq!(r.timestamp(), base_timestamp.wrapping_add(s.timestamp_delta));
            prop_assert_eq!(r.key(), s.key.as_deref());
            prop_assert_eq!(r.value(), s.value.as_deref());
            let headers: Hdrs = r.headers().iter().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect();
            prop_assert_eq!(&headers, &s.headers);
            for (k, _) in &s.headers {
                let first = s.headers.iter().find(|(k2, _)| k2 == k).unwrap();
                prop_assert_eq!(r.headers().get(k).map(|h| h.value.map(<[u8]>::to_vec)), Some(first.1.clone()));
                prop_assert_eq!(r.headers().get_all(k).count(), s.headers.iter().filter(|(k2, _)| k2 == k).count());
                // A key one byte longer than a present one: same prefix, different length.
                let longer = [k.as_slice(), b"\0"].concat();
                let expected = s.headers.iter().find(|(k2, _)| *k2 == longer).map(|(_, v)| v.clone());
                prop_assert_eq!(r.headers().get(&longer).map(|h| h.value.map(<[u8]>::to_vec)), expected);
            }
        }
        prop_assert!(walk.next().is_none());
        prop_assert_eq!(walk.end(), Some(WalkEnd::Complete));
    }

    #[test]
    fn arbitrary_bytes_never_panic(input in bytes(2000), verify_crc in any::<bool>()) {
        let config = DecodeConfig { verify_crc, ..DecodeConfig::default() };
        consume(&input, &config);
    }

    #[test]
    fn mutated_batches_never_panic(
        codec in codec(),
        records in proptest::collection::vec(record(), 1..6),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut builder = BatchBuilder::new(0).compression(codec);
        for (_, _, key, value, headers) in records {
            let hs: Vec<(&[u8], Option<&[u8]>)> = headers.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect();
            builder = builder.record(key.as_deref(), value.as_deref(), &hs);
        }
        let mut bytes = builder.build();
        for (index, value) in flips {
            let i = index.index(bytes.len());
            bytes[i] = value;
        }
        // With the CRC skipped the mutations reach the record parser.
        let config = DecodeConfig { verify_crc: false, ..DecodeConfig::default() };
        consume(&bytes, &config);
    }

    #[test]
    fn a_cut_trailing_batch_is_partial(
        sizes in proptest::collection::vec(0usize..5, 1..5),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut input = Vec::new();
        let mut starts = Vec::new();
        for (i, n) in sizes.iter().enumerate() {
            starts.push(input.len());
            let mut b = BatchBuilder::new(i as i64 * 10).last_offset_delta(9);
            for j in 0..*n {
                b = b.record(None, Some(&vec![j as u8; j * 30]), &[]);
            }
            input.extend_from_slice(&b.build());
        }
        let cut = cut.index(input.len() + 1);
        let config = DecodeConfig::default();
        let mut walk = BatchWalk::new(&input[..cut], &config);
        let whole = walk.by_ref().inspect(|b| assert!(b.is_ok())).count();
        let expected_whole = starts.iter().filter(|&&s| s < cut).count()
            - usize::from(!starts.contains(&cut) && cut != input.len());
        prop_assert_eq!(whole, expected_whole);
        match walk.end().unwrap() {
            WalkEnd::Complete => prop_assert!(cut == input.len() || starts.contains(&cut)),
            WalkEnd::Partial { position, .. } => {
                prop_assert_eq!(position, starts[whole]);
                prop_assert!(walk.end_of_file().is_err());
            }
        }
    }
}
