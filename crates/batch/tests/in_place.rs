//! `BatchWalk::next_ref` and `Records::next_ref` (batch and record filled in place) yield
//! exactly what the iterators yield: every batch field, the same records field for field, the
//! same control records, the same errors at the same places, and the same walk end. (The record
//! iterator is the in-place path plus a copy; the batch walk has two paths, `parse` and
//! `parse_into`.) Inputs mix codecs, so the in-place path reuses one batch's decompression
//! buffer for the next, batch attributes (so a field left over from the batch before would
//! show), control batches, and legacy messages, so it also takes the by-value path for them.
//! The in-place walk runs twice, so that the second walk's compressed batches land in a pooled
//! buffer the first left.

use krec_batch::encode::{BatchBuilder, LegacyBuilder, LegacyMessage};
use krec_batch::{Batch, BatchWalk, Compression, ControlKind, DecodeConfig, Record};
use proptest::prelude::*;

/// Everything a record shows, owned, so two walks can be compared.
#[derive(Debug, PartialEq)]
struct Seen {
    offset: i64,
    timestamp: i64,
    timestamp_type: String,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    first_header_a: Option<Option<Vec<u8>>>,
}

impl Seen {
    fn of(r: &Record<'_>) -> Self {
        Seen {
            offset: r.offset(),
            timestamp: r.timestamp(),
            timestamp_type: format!("{:?}", r.timestamp_type()),
            key: r.key().map(<[u8]>::to_vec),
            value: r.value().map(<[u8]>::to_vec),
            headers: r
                .headers()
                .iter()
                .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                .collect(),
            first_header_a: r.headers().get(b"a").map(|h| h.value.map(<[u8]>::to_vec)),
        }
    }
}

/// Every field a batch shows, so that one the in-place parse failed to overwrite (left from
/// the batch before) shows as a difference.
#[derive(Debug, PartialEq)]
struct BatchSeen {
    base_offset: i64,
    next_offset: i64,
    magic: u8,
    compression: Compression,
    timestamp_type: String,
    transactional: bool,
    control: bool,
    delete_horizon: Option<i64>,
    attributes: i16,
    producer: (i64, i16, i32),
    partition_leader_epoch: i32,
    timestamps: (i64, i64),
    record_count: u32,
    position: usize,
    size: usize,
    records_bytes: Vec<u8>,
    control_records: Vec<String>,
}

impl BatchSeen {
    fn of(b: &Batch<'_>) -> Self {
        BatchSeen {
            base_offset: b.base_offset(),
            next_offset: b.next_offset(),
            magic: b.magic(),
            compression: b.compression(),
            timestamp_type: format!("{:?}", b.timestamp_type()),
            transactional: b.is_transactional(),
            control: b.is_control(),
            delete_horizon: b.delete_horizon(),
            attributes: b.attributes(),
            producer: (b.producer_id(), b.producer_epoch(), b.base_sequence()),
            partition_leader_epoch: b.partition_leader_epoch(),
            timestamps: (b.base_timestamp(), b.max_timestamp()),
            record_count: b.record_count(),
            position: b.position(),
            size: b.size(),
            records_bytes: b.records_bytes().to_vec(),
            control_records: b.control_records().map(|c| format!("{c:?}")).collect(),
        }
    }
}

/// What one walk saw: every batch and its records, then the error or end.
#[derive(Debug, PartialEq)]
enum Event {
    Batch(Box<BatchSeen>),
    Record(Seen),
    Error(String),
}

fn batch_events(batch: &Batch<'_>, out: &mut Vec<Event>, in_place: bool) {
    out.push(Event::Batch(Box::new(BatchSeen::of(batch))));
    let mut records = batch.records();
    if in_place {
        while let Some(r) = records.next_ref() {
            out.push(match r {
                Ok(r) => Event::Record(Seen::of(r)),
                Err(e) => Event::Error(e.to_string()),
            });
        }
    } else {
        for r in records {
            out.push(match r {
                Ok(r) => Event::Record(Seen::of(&r)),
                Err(e) => Event::Error(e.to_string()),
            });
        }
    }
}

fn by_iterator(input: &[u8], config: &DecodeConfig) -> (Vec<Event>, String) {
    let mut out = Vec::new();
    let mut walk = BatchWalk::new(input, config);
    for batch in walk.by_ref() {
        match batch {
            Ok(batch) => batch_events(&batch, &mut out, false),
            Err(e) => out.push(Event::Error(e.to_string())),
        }
    }
    (out, format!("{:?} at {}", walk.end(), walk.position()))
}

fn in_place(input: &[u8], config: &DecodeConfig) -> (Vec<Event>, String) {
    let mut out = Vec::new();
    let mut walk = BatchWalk::new(input, config);
    while let Some(batch) = walk.next_ref() {
        match batch {
            Ok(batch) => batch_events(batch, &mut out, true),
            Err(e) => out.push(Event::Error(e.to_string())),
        }
    }
    (out, format!("{:?} at {}", walk.end(), walk.position()))
}

/// Asserts that walks in place see what the iterator sees, twice: the second walk decompresses
/// into buffers the first gave back to the pool.
fn assert_all_paths_agree(input: &[u8], config: &DecodeConfig) -> Result<(), TestCaseError> {
    let expected = by_iterator(input, config);
    prop_assert_eq!(&in_place(input, config), &expected);
    prop_assert_eq!(&in_place(input, config), &expected);
    Ok(())
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
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

type Records = Vec<(
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
)>;

fn records() -> impl Strategy<Value = Records> {
    proptest::collection::vec(
        (
            proptest::option::of(bytes(20)),
            proptest::option::of(bytes(200)),
            // Up to 14 headers: past the 9 the inline index holds, so the spilled index of one
            // record must not leak into the next one filled in the same place.
            proptest::collection::vec(
                (
                    prop_oneof![Just(b"a".to_vec()), bytes(4)],
                    proptest::option::of(bytes(6)),
                ),
                0..14,
            ),
        ),
        0..8,
    )
}

/// How a v2 batch is written besides its codec and records: a seed for its header fields,
/// and whether it is a transaction marker instead.
#[derive(Clone, Copy, Debug)]
struct Style {
    seed: u8,
    control: bool,
}

fn style() -> impl Strategy<Value = Style> {
    (any::<u8>(), proptest::bool::weighted(0.15))
        .prop_map(|(seed, control)| Style { seed, control })
}

/// A v2 batch's header fields from `style.seed`: each bit turns one of them on, so neighbours
/// in a segment differ in fields the in-place parse must overwrite.
fn styled(b: BatchBuilder, style: Style) -> BatchBuilder {
    let seed = style.seed;
    let bit = |n: u8| seed & (1 << n) != 0;
    let mut b = b
        .log_append_time(bit(0))
        .transactional(bit(1))
        .delete_horizon(bit(2))
        .partition_leader_epoch(if bit(3) { i32::from(seed) } else { -1 })
        .base_timestamp(1_700_000_000_000 + i64::from(seed))
        .max_timestamp(1_700_000_000_500 + i64::from(seed));
    if bit(4) {
        b = b.producer(
            1000 + i64::from(seed),
            i16::from(seed & 0x0f),
            i32::from(seed) * 3,
        );
    }
    if style.control {
        let kind = if bit(5) {
            ControlKind::Commit
        } else {
            ControlKind::Abort
        };
        b = b.control_marker(kind, i32::from(seed));
    }
    b
}

/// Batches of mixed codecs and header fields, a legacy message now and then, all in one buffer.
fn segment(batches: &[(Compression, bool, Records)]) -> Vec<u8> {
    let styles: Vec<Style> = batches
        .iter()
        .enumerate()
        .map(|(i, _)| Style {
            seed: (i as u8).wrapping_mul(37),
            control: false,
        })
        .collect();
    styled_segment(batches, &styles)
}

/// [`segment`] with each v2 batch written in its own style (`styles[i]` for batch `i`).
fn styled_segment(batches: &[(Compression, bool, Records)], styles: &[Style]) -> Vec<u8> {
    let mut input = Vec::new();
    let mut offset = 0i64;
    for ((codec, legacy, records), style) in batches.iter().zip(styles) {
        if *legacy && !records.is_empty() {
            // A v1 message set (zstd needs v2, so that codec writes plain messages).
            let codec = if *codec == Compression::Zstd {
                Compression::None
            } else {
                *codec
            };
            let compressed = codec != Compression::None;
            let mut b = LegacyBuilder::new(1).compression(codec);
            for (i, (key, value, _)) in records.iter().enumerate() {
                b = b.message(LegacyMessage {
                    // Inside a compressed v1 wrapper offsets are relative.
                    offset: if compressed {
                        i as i64
                    } else {
                        offset + i as i64
                    },
                    timestamp: 1_700_000_000_000 + i as i64,
                    key: key.clone(),
                    value: value.clone(),
                });
            }
            input.extend_from_slice(&b.build(offset + records.len() as i64 - 1));
            offset += records.len() as i64;
            continue;
        }
        if style.control {
            // A marker batch holds the marker only.
            input.extend_from_slice(&styled(BatchBuilder::new(offset), *style).build());
            offset += 1;
            continue;
        }
        let mut b = styled(BatchBuilder::new(offset).compression(*codec), *style);
        for (key, value, headers) in records {
            let hs: Vec<(&[u8], Option<&[u8]>)> = headers
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_deref()))
                .collect();
            b = b.record(key.as_deref(), value.as_deref(), &hs);
        }
        offset += records.len().max(1) as i64;
        input.extend_from_slice(&b.build());
    }
    input
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn in_place_walks_equal_iterator_walks(
        batches in proptest::collection::vec((codec(), proptest::bool::weighted(0.1), records()), 0..6),
        styles in proptest::collection::vec(style(), 6),
    ) {
        let input = styled_segment(&batches, &styles);
        let config = DecodeConfig::default();
        assert_all_paths_agree(&input, &config)?;
    }

    #[test]
    fn in_place_walks_equal_iterator_walks_on_damaged_input(
        batches in proptest::collection::vec((codec(), Just(false), records()), 1..4),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut input = segment(&batches);
        for (index, value) in flips {
            let i = index.index(input.len());
            input[i] = value;
        }
        input.truncate(cut.index(input.len() + 1));
        let config = DecodeConfig { verify_crc: false, ..DecodeConfig::default() };
        assert_all_paths_agree(&input, &config)?;
    }
}

#[test]
fn a_lent_batch_reuses_the_buffer_of_the_one_before_without_showing_its_bytes() {
    // A long LZ4 batch, then a short one: the short one's records must not see the long
    // one's bytes past its own end.
    let long = BatchBuilder::new(0)
        .compression(Compression::Lz4)
        .record(None, Some(&[b'x'; 5000]), &[])
        .build();
    let short = BatchBuilder::new(1)
        .compression(Compression::Lz4)
        .record(None, Some(b"yy"), &[])
        .build();
    let input = [long, short].concat();
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&input, &config);
    let first = walk.next_ref().unwrap().unwrap();
    assert!(first.records_bytes().len() > 5000);
    let second = walk.next_ref().unwrap().unwrap();
    let mut records = second.records();
    assert_eq!(
        records.next_ref().unwrap().unwrap().value(),
        Some(&b"yy"[..])
    );
    assert!(records.next_ref().is_none());
    assert!(second.records_bytes().len() < 20);
    assert!(walk.next_ref().is_none());
}

#[test]
fn from_offset_skips_earlier_records_on_both_paths_but_still_checks_them() {
    let mut b = BatchBuilder::new(100);
    for i in 0..5u8 {
        b = b.record(None, Some(&[i]), &[]);
    }
    let input = b.build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&input, &config).next().unwrap().unwrap();
    let by_iterator: Vec<i64> = batch
        .records()
        .from_offset(103)
        .map(|r| r.unwrap().offset())
        .collect();
    let mut in_place = Vec::new();
    let mut records = batch.records().from_offset(103);
    while let Some(r) = records.next_ref() {
        in_place.push(r.unwrap().offset());
    }
    assert_eq!(by_iterator, [103, 104]);
    assert_eq!(in_place, [103, 104]);

    // A record before the offset whose length lies is still an error, on both paths.
    let mut bad = input.clone();
    // The first record's length varint sits right after the 61-byte header.
    bad[61] = 0x7e;
    let config = DecodeConfig {
        verify_crc: false,
        ..DecodeConfig::default()
    };
    let batch = BatchWalk::new(&bad, &config).next().unwrap().unwrap();
    assert!(batch.records().from_offset(103).next().unwrap().is_err());
    assert!(batch
        .records()
        .from_offset(103)
        .next_ref()
        .unwrap()
        .is_err());
}

#[test]
fn until_offset_ends_the_records_inside_a_batch() {
    let mut b = BatchBuilder::new(100);
    for i in 0..6u8 {
        b = b.record(None, Some(&[i]), &[]);
    }
    let input = b.build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&input, &config).next().unwrap().unwrap();
    let offsets = |records: krec_batch::Records<'_>| -> Vec<i64> {
        records.map(|r| r.unwrap().offset()).collect()
    };
    assert_eq!(
        offsets(batch.records().from_offset(101).until_offset(104)),
        [101, 102, 103]
    );
    assert_eq!(
        offsets(batch.records().until_offset(102).from_offset(101)),
        [101]
    );
    assert_eq!(
        offsets(batch.records().until_offset(100)),
        Vec::<i64>::new()
    );
    assert_eq!(
        offsets(batch.records().from_offset(104).until_offset(i64::MAX)),
        [104, 105]
    );
    let mut in_place = Vec::new();
    let mut records = batch.records().from_offset(102).until_offset(103);
    while let Some(r) = records.next_ref() {
        in_place.push(r.unwrap().offset());
    }
    assert_eq!(in_place, [102]);
}
