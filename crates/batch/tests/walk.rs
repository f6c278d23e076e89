//! Walking many batches: partial trailing batches end the walk cleanly and say where to resume.

use krec_batch::encode::{BatchBuilder, LegacyBuilder, LegacyMessage};
use krec_batch::{BatchWalk, Compression, DecodeConfig, Error, WalkEnd};

fn three_batches() -> (Vec<u8>, Vec<usize>) {
    let batches = [
        BatchBuilder::new(0).record(None, Some(b"a"), &[]).build(),
        BatchBuilder::new(1)
            .compression(Compression::Lz4)
            .record(Some(b"k"), Some(b"b"), &[(b"h", None)])
            .build(),
        LegacyBuilder::new(1)
            .message(LegacyMessage {
                offset: 2,
                timestamp: 5,
                key: None,
                value: Some(b"c".to_vec()),
            })
            .build(0),
    ];
    let mut starts = Vec::new();
    let mut input = Vec::new();
    for b in &batches {
        starts.push(input.len());
        input.extend_from_slice(b);
    }
    (input, starts)
}

#[test]
fn every_cut_point_is_reported_as_partial_with_the_resume_point() {
    let (input, starts) = three_batches();
    let config = DecodeConfig::default();
    for cut in 0..input.len() {
        let mut walk = BatchWalk::new(&input[..cut], &config);
        let whole: Vec<_> = walk
            .by_ref()
            .map(|b| b.expect("whole batches decode").base_offset())
            .collect();
        let in_batch = starts.iter().rposition(|&s| s <= cut).unwrap();
        let position = starts[in_batch];
        assert_eq!(whole, (0..in_batch as i64).collect::<Vec<_>>(), "cut {cut}");
        assert_eq!(walk.position(), position, "cut {cut}");
        let end = walk.end().expect("walk ended");
        if cut == position {
            assert_eq!(end, WalkEnd::Complete, "cut {cut} is on a boundary");
            continue;
        }
        let WalkEnd::Partial {
            position: p,
            base_offset,
            needed,
        } = end
        else {
            panic!("cut {cut}: expected partial, got {end:?}");
        };
        assert_eq!(p, position);
        let have = cut - position;
        assert_eq!(
            base_offset,
            (have >= 8).then_some(in_batch as i64),
            "cut {cut}"
        );
        let size = starts.get(in_batch + 1).copied().unwrap_or(input.len()) - position;
        assert_eq!(needed, (have >= 12).then_some(size), "cut {cut}");
        // A file must hold whole batches.
        assert!(
            matches!(walk.end_of_file(), Err(Error::Truncated { position: p2, available, .. }) if p2 == position && available == have)
        );
    }
}

#[test]
fn a_whole_input_ends_complete() {
    let (input, _) = three_batches();
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&input, &config);
    assert_eq!(walk.by_ref().count(), 3);
    assert_eq!(walk.end(), Some(WalkEnd::Complete));
    assert_eq!(walk.position(), input.len());
    assert!(walk.end_of_file().is_ok());
    let empty = BatchWalk::new(&[], &config).count();
    assert_eq!(empty, 0);
}

#[test]
fn the_walk_stops_after_an_error() {
    let (mut input, starts) = three_batches();
    input[starts[1] + 16] = 9; // bad magic in the second batch
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&input, &config);
    assert!(walk.next().unwrap().is_ok());
    assert!(matches!(
        walk.next(),
        Some(Err(Error::UnsupportedMagic { magic: 9, .. }))
    ));
    assert!(walk.next().is_none());
    assert_eq!(walk.end(), None);
    assert_eq!(
        walk.position(),
        starts[1],
        "position stays on the bad batch"
    );
}

/// Data records and markers of every batch, by full decode.
fn decoded_counts(input: &[u8]) -> Vec<(i64, u32, bool)> {
    let config = DecodeConfig::default();
    BatchWalk::new(input, &config)
        .map(|batch| {
            let batch = batch.expect("golden files decode");
            let records = batch.records().inspect(|r| assert!(r.is_ok())).count();
            (batch.base_offset(), records as u32, batch.is_control())
        })
        .collect()
}

#[test]
fn summaries_count_what_a_full_decode_finds_in_every_golden_file() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "bin") {
            continue;
        }
        files += 1;
        let input = std::fs::read(&path).unwrap();
        let config = DecodeConfig::default();
        let mut walk = BatchWalk::new(&input, &config);
        let mut summaries = Vec::new();
        while let Some(summary) = walk.next_summary() {
            summaries.push(summary.unwrap());
        }
        walk.end_of_file().unwrap();
        let counted: Vec<(i64, u32, bool)> = summaries
            .iter()
            .map(|s| (s.base_offset, s.data_records, s.control))
            .collect();
        assert_eq!(counted, decoded_counts(&input), "{}", path.display());
        let ends: Vec<usize> = summaries.iter().map(|s| s.position + s.size).collect();
        assert_eq!(
            ends.last().copied(),
            Some(input.len()),
            "{}",
            path.display()
        );
    }
    assert!(files >= 29, "the golden files are there ({files})");
}

#[test]
fn summaries_read_markers_and_producers_of_transactions() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let input = std::fs::read(dir.join("librdkafka-transactional.bin")).unwrap();
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&input, &config);
    let mut markers = Vec::new();
    let mut producers = std::collections::BTreeSet::new();
    while let Some(summary) = walk.next_summary() {
        let summary = summary.unwrap();
        assert!(summary.transactional);
        producers.insert(summary.producer_id);
        if let Some(marker) = summary.marker {
            markers.push((summary.base_offset, marker));
        }
    }
    use krec_batch::ControlKind::{Abort, Commit};
    assert_eq!(markers, vec![(3, Commit), (6, Abort), (9, Commit)]);
    assert_eq!(producers.len(), 1);
    assert!(producers.iter().all(|&p| p >= 0));
}

#[test]
fn a_summary_checks_the_crc_without_decompressing() {
    let batch = BatchBuilder::new(0)
        .compression(Compression::Zstd)
        .record(None, Some(b"a"), &[])
        .record(None, Some(b"b"), &[])
        .build();
    let config = DecodeConfig::default();
    let summary = BatchWalk::new(&batch, &config)
        .next_summary()
        .unwrap()
        .unwrap();
    assert_eq!((summary.data_records, summary.last_offset), (2, 1));
    let mut corrupt = batch.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 1;
    let mut walk = BatchWalk::new(&corrupt, &config);
    assert!(matches!(
        walk.next_summary(),
        Some(Err(Error::ChecksumMismatch { .. }))
    ));
    assert!(
        walk.next_summary().is_none(),
        "the walk stops after an error"
    );
}

#[test]
fn skip_failed_steps_over_a_whole_bad_batch_and_only_that() {
    let good = |base| {
        BatchBuilder::new(base)
            .record(None, Some(b"v"), &[])
            .build()
    };
    let mut bad = BatchBuilder::new(1)
        .last_offset_delta(2)
        .record(None, Some(b"x"), &[])
        .build();
    let crc_at = krec_batch::layout::v2::CRC_AT;
    bad[crc_at] ^= 0xff;
    let input = [good(0), bad.clone(), good(4)].concat();
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&input, &config);
    let mut offsets = Vec::new();
    let mut skipped = Vec::new();
    while let Some(batch) = walk.next_ref() {
        match batch {
            Ok(batch) => offsets.push(batch.base_offset()),
            Err(error) => {
                let stepped = walk
                    .skip_failed(krec_batch::OnCorrupt::Skip, error)
                    .expect("a whole batch can be skipped");
                assert!(matches!(stepped.error, Error::ChecksumMismatch { .. }));
                skipped.push(stepped.span);
            }
        }
    }
    assert_eq!(offsets, [0, 4]);
    let first = good(0).len();
    assert_eq!(
        skipped,
        [krec_batch::BatchSpan {
            position: first,
            size: bad.len(),
            base_offset: 1,
            last_offset: 3,
        }]
    );
    assert_eq!(walk.end(), Some(WalkEnd::Complete));

    // Under `stop`, or when the length field itself is bad, the walk stays stopped.
    let mut walk = BatchWalk::new(&input, &config);
    walk.next_ref();
    let error = walk.next_ref().unwrap().unwrap_err();
    let error = walk
        .skip_failed(krec_batch::OnCorrupt::Stop, error)
        .unwrap_err();
    assert!(matches!(error, Error::ChecksumMismatch { .. }));
    assert!(walk.next_ref().is_none());
    let mut lying = input.clone();
    lying[first + 8..first + 12].copy_from_slice(&(-1i32).to_be_bytes());
    let mut walk = BatchWalk::new(&lying, &config);
    walk.next_ref();
    let error = walk.next_ref().unwrap().unwrap_err();
    let error = walk
        .skip_failed(krec_batch::OnCorrupt::Skip, error)
        .unwrap_err();
    assert!(matches!(error, Error::BatchTooSmall { .. }));
    assert!(walk.next_ref().is_none());
}
