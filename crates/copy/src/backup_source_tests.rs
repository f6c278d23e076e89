//! BackupSource over segments written here: ranges smaller than a batch, a cut batch, a bad
//! CRC named by file and byte, and `until` cutting inside a batch.

use std::path::Path;

use krec_batch::encode::{BatchBuilder, RecordSpec};
use krec_batch::Compression;

use super::*;
use crate::manifest::{segment_name, TopicManifest};

/// A batch of `count` records from `base`, stamped `ts, ts + 1, ...`, valued `v<offset>`.
fn batch(base: i64, count: i64, ts: i64, codec: Compression) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base)
        .compression(codec)
        .base_timestamp(ts)
        .max_timestamp(ts + count - 1);
    for delta in 0..count {
        builder = builder.record_spec(RecordSpec {
            offset_delta: delta as i32,
            timestamp_delta: delta,
            key: Some(b"k".to_vec()),
            value: Some(format!("v{}", base + delta).into_bytes()),
            headers: vec![(b"h".to_vec(), None)],
        });
    }
    builder.build()
}

/// Writes the segments of partition `t-0` (each a list of batches) into `dir`, and a
/// manifest listing them with `next_offset`.
fn backup(dir: &Path, segments: &[Vec<Vec<u8>>], next_offset: i64) -> Manifest {
    let config = DecodeConfig::default();
    let mut kept = PartitionManifest {
        next_offset: Some(next_offset),
        ..PartitionManifest::default()
    };
    for batches in segments {
        let bytes = batches.concat();
        let summaries: Vec<BatchSummary> = (BatchWalk::new(&bytes, &config))
            .map(|b| BatchSummary::counting(&b.unwrap(), 0, |_| true).unwrap())
            .collect();
        let base_offset = summaries[0].base_offset;
        let file = segment_name("t", 0, base_offset);
        std::fs::create_dir_all(dir.join("t-0")).unwrap();
        std::fs::write(dir.join(&file), &bytes).unwrap();
        kept.segments.push(SegmentManifest {
            file,
            base_offset,
            last_offset: summaries.last().unwrap().last_offset,
            bytes: bytes.len() as u64,
            records: summaries.iter().map(|s| u64::from(s.data_records)).sum(),
            first_timestamp: -1,
            max_timestamp: -1,
        });
    }
    let mut manifest = Manifest::new(0, Vec::new());
    let mut topic = TopicManifest {
        partitions: 1,
        ..TopicManifest::default()
    };
    topic.partition.insert(0, kept);
    manifest.topics.insert("t".to_owned(), topic);
    manifest
}

async fn source(dir: &Path, manifest: Manifest, until: Option<i64>, skip: bool) -> BackupSource {
    let store = Store::open(dir.to_str().unwrap()).await.unwrap();
    let on_corrupt = if skip {
        OnCorrupt::Skip
    } else {
        OnCorrupt::Stop
    };
    let config = DecodeConfig::default();
    BackupSource::new(store, manifest, None, until, on_corrupt, config).unwrap()
}

fn t0() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// Every run until the end, or the error that stopped it.
async fn drain(source: &mut BackupSource, at: Option<i64>) -> (Vec<SourceRun>, Option<Error>) {
    source.assign(&[(t0(), at)]).await.unwrap();
    let mut runs = Vec::new();
    loop {
        match source.next_run().await {
            Ok(Some(run)) => runs.push(run),
            Ok(None) => return (runs, None),
            Err(error) => return (runs, Some(error)),
        }
    }
}

/// The values the runs carry from each run's `from_offset` on, in order.
fn values(runs: &[SourceRun]) -> Vec<String> {
    let config = DecodeConfig::default();
    let mut values = Vec::new();
    for run in runs {
        for batch in &run.batches {
            let decoded = BatchWalk::new(&batch.bytes, &config)
                .next()
                .unwrap()
                .unwrap();
            for record in decoded.records() {
                let record = record.unwrap();
                if record.offset() >= run.from_offset {
                    values.push(String::from_utf8(record.value().unwrap().to_vec()).unwrap());
                }
            }
        }
    }
    values
}

fn expected(offsets: std::ops::Range<i64>) -> Vec<String> {
    offsets.map(|o| format!("v{o}")).collect()
}

#[tokio::test]
async fn ranges_smaller_than_a_batch_read_every_batch_once() {
    let dir = tempfile::tempdir().unwrap();
    let segments = vec![
        vec![
            batch(0, 4, 100, Compression::None),
            batch(4, 6, 104, Compression::Zstd),
        ],
        vec![
            batch(10, 5, 110, Compression::Lz4),
            batch(15, 5, 115, Compression::Gzip),
        ],
    ];
    // A commit marker at offset 20 was left out: the partition ends after it.
    let manifest = backup(dir.path(), &segments, 21);
    let mut small = source(dir.path(), manifest.clone(), None, false).await;
    small.set_range_bytes(40);
    let (runs, error) = drain(&mut small, None).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(values(&runs), expected(0..20));
    assert_eq!(runs.last().unwrap().next_offset, 21);
    assert_eq!(small.lag(), [(t0(), 0)]);
    // Resumed inside a batch: that batch comes whole, from the position on.
    let mut resumed = source(dir.path(), manifest, None, false).await;
    let (runs, error) = drain(&mut resumed, Some(7)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(runs[0].from_offset, 7);
    assert_eq!(runs[0].batches[0].summary.base_offset, 4);
    assert_eq!(values(&runs), expected(7..20));
}

#[tokio::test]
async fn a_cut_batch_names_the_file_and_byte_and_nothing_past_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let first = batch(0, 3, 100, Compression::None);
    let second = batch(3, 3, 103, Compression::None);
    let cut = second[..second.len() - 5].to_vec();
    // The manifest agrees with the file's size: the cut shows in the walk.
    let manifest = backup(dir.path(), &[vec![first.clone(), cut]], 6);
    let mut cut_source = source(dir.path(), manifest, None, false).await;
    let (runs, error) = drain(&mut cut_source, None).await;
    let error = error.expect("a cut batch stops the restore");
    let text = error.to_string();
    assert!(text.contains("t-0/00000000000000000000.log"), "{text}");
    assert!(
        matches!(error, Error::Backup { position: Some(p), .. } if p == first.len() as u64),
        "{text}"
    );
    assert_eq!(
        values(&runs),
        expected(0..3),
        "the batch before it, nothing after"
    );

    // A file shorter than the manifest says is refused before anything of it is read.
    let dir = tempfile::tempdir().unwrap();
    let manifest = backup(dir.path(), &[vec![first.clone(), second]], 6);
    let file = dir
        .path()
        .join(&manifest.topics["t"].partition[&0].segments[0].file);
    std::fs::write(&file, &first).unwrap();
    let mut short = source(dir.path(), manifest, None, false).await;
    let (runs, error) = drain(&mut short, None).await;
    let error = error.expect("a short file stops the restore");
    assert!(runs.is_empty());
    assert!(
        matches!(&error, Error::Backup { position: Some(p), detail, .. }
            if *p == first.len() as u64 && detail.contains("truncated")),
        "{error}"
    );
}

#[tokio::test]
async fn a_bad_crc_stops_at_its_byte_or_is_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let first = batch(0, 3, 100, Compression::None);
    let second = batch(3, 3, 103, Compression::None);
    let third = batch(6, 3, 106, Compression::Snappy);
    let flipped = first.len() + second.len() - 1;
    let manifest = backup(dir.path(), &[vec![first.clone(), second, third]], 9);
    let file = dir.path().join(segment_name("t", 0, 0));
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[flipped] ^= 0xff;
    std::fs::write(&file, bytes).unwrap();
    let mut stops = source(dir.path(), manifest.clone(), None, false).await;
    let (runs, error) = drain(&mut stops, None).await;
    let error = error.expect("a bad CRC stops the restore");
    assert_eq!(
        values(&runs),
        expected(0..3),
        "the batch before it, nothing after"
    );
    let text = error.to_string();
    assert!(
        text.contains(&format!("00000000000000000000.log at byte {}", first.len())),
        "{text}"
    );
    assert!(text.contains("checksum"), "{text}");

    let mut skips = source(dir.path(), manifest, None, true).await;
    let (warnings, skipped) = (skips.warnings(), skips.corrupt_skipped());
    let (runs, error) = drain(&mut skips, None).await;
    assert!(error.is_none(), "{error:?}");
    let mut wanted = expected(0..3);
    wanted.extend(expected(6..9));
    assert_eq!(values(&runs), wanted);
    assert_eq!(warnings.load(Ordering::Relaxed), 1);
    assert_eq!(skipped.load(Ordering::Relaxed), 1);
    assert_eq!(runs.last().unwrap().next_offset, 9);
}

#[tokio::test]
async fn until_cuts_inside_a_batch_and_ends_the_partition_there() {
    let dir = tempfile::tempdir().unwrap();
    let segments = vec![
        vec![batch(0, 5, 100, Compression::Zstd)],
        vec![
            batch(5, 10, 105, Compression::Lz4),
            batch(15, 5, 115, Compression::None),
        ],
    ];
    let manifest = backup(dir.path(), &segments, 20);
    // Stamped 105.. from offset 5: the first record at or after 108 is offset 8.
    let mut until = source(dir.path(), manifest.clone(), Some(108), false).await;
    let (runs, error) = drain(&mut until, None).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(values(&runs), expected(0..8));
    assert_eq!(runs.last().unwrap().next_offset, 8);
    assert_eq!(until.lag(), [(t0(), 0)]);
    // The cut batch went re-encoded in the source's codec, starting at its first offset.
    let cut = runs.last().unwrap().batches.last().unwrap();
    assert_eq!(cut.summary.base_offset, 5);
    assert_eq!(cut.summary.compression, Compression::Lz4);
    assert_eq!(cut.summary.data_records, 3);
    // Run again from the cut: nothing more.
    let mut again = source(dir.path(), manifest.clone(), Some(108), false).await;
    let (runs, error) = drain(&mut again, Some(8)).await;
    assert!(error.is_none() && values(&runs).is_empty(), "{error:?}");
    // A time before every record: nothing at all.
    let mut before = source(dir.path(), manifest, Some(50), false).await;
    let (runs, _) = drain(&mut before, None).await;
    assert!(values(&runs).is_empty());
}
