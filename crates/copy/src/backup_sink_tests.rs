//! The backup sink over a real directory, with batches from krec-batch's encoder: what a
//! header says, how segments roll and are named, what a commit, an abort and a restart leave.

use krec_batch::encode::{BatchBuilder, LegacyBuilder, LegacyMessage, RecordSpec};
use krec_client::ConnectionSettings;

use super::*;

/// `count` records at `base`, timestamps from `at` one millisecond apart.
fn batch(base: i64, count: i32, at: i64) -> Bytes {
    let mut builder = BatchBuilder::new(base)
        .base_timestamp(at)
        .max_timestamp(at + i64::from(count) - 1);
    for i in 0..count {
        builder = builder.record_spec(RecordSpec {
            offset_delta: i,
            timestamp_delta: i64::from(i),
            key: None,
            value: Some(vec![b'v'; 100]),
            headers: Vec::new(),
        });
    }
    Bytes::from(builder.build())
}

fn partition(number: i32) -> TopicPartition {
    TopicPartition::new("orders", number)
}

fn topic(partitions: i32) -> SourceTopic {
    SourceTopic {
        name: "orders".to_owned(),
        id: None,
        partitions,
        configs: vec![("cleanup.policy".to_owned(), "delete".to_owned())],
    }
}

/// A sink into `dir`; its groups are read from a broker where nothing listens (a warning).
async fn sink(dir: &std::path::Path, segment_bytes: u64) -> BackupSink {
    let store = Store::open_to_write(dir.to_str().unwrap()).await.unwrap();
    let nowhere = vec!["127.0.0.1:1".to_owned()];
    let groups = GroupOffsetsReader::new(nowhere.clone(), ConnectionSettings::default());
    BackupSink::open(store, nowhere, segment_bytes, false, groups)
        .await
        .unwrap()
}

fn manifest(dir: &std::path::Path) -> Manifest {
    let bytes = std::fs::read(dir.join(MANIFEST)).unwrap();
    Manifest::parse(&bytes, "dir").unwrap()
}

#[test]
fn a_v2_header_gives_offsets_and_timestamps() {
    let facts = batch_facts(&batch(40, 5, 1_000)).unwrap();
    assert_eq!(
        facts,
        BatchFacts {
            base_offset: 40,
            last_offset: 44,
            first_timestamp: 1_000,
            max_timestamp: 1_004,
        }
    );
}

#[test]
fn a_delete_horizon_is_not_taken_for_the_first_timestamp() {
    let horizon = BatchBuilder::new(7)
        .delete_horizon(true)
        .base_timestamp(9_000)
        .max_timestamp(8_500)
        .record_spec(RecordSpec {
            offset_delta: 0,
            timestamp_delta: -600,
            key: Some(b"k".to_vec()),
            value: None,
            headers: Vec::new(),
        })
        .build();
    let facts = batch_facts(&horizon).unwrap();
    assert_eq!((facts.base_offset, facts.last_offset), (7, 7));
    assert_eq!(facts.first_timestamp, 8_400);
    assert_eq!(facts.max_timestamp, 8_500);
}

#[test]
fn a_legacy_message_set_is_read_through_the_walk() {
    let message = |offset, timestamp| LegacyMessage {
        offset,
        timestamp,
        key: None,
        value: Some(b"old".to_vec()),
    };
    let set = LegacyBuilder::new(1)
        .compression(krec_batch::Compression::Gzip)
        .message(message(0, 500))
        .message(message(1, 700))
        .build(11);
    let facts = batch_facts(&set).unwrap();
    assert_eq!((facts.base_offset, facts.last_offset), (10, 11));
    assert_eq!(facts.first_timestamp, 500);
}

#[test]
fn a_cut_or_foreign_batch_is_an_error_not_a_panic() {
    let whole = batch(0, 3, 0);
    for cut in [0, 5, 12, 30, whole.len() - 1] {
        assert!(batch_facts(&whole[..cut]).is_err(), "cut at {cut}");
    }
    let mut corrupt = whole.to_vec();
    corrupt[layout::MAGIC_AT] = 9;
    assert!(batch_facts(&corrupt).is_err());
}

#[tokio::test]
async fn segments_roll_commit_whole_and_a_restart_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = sink(dir.path(), 2_000).await;
    sink.prepare(&[topic(2)]).await.unwrap();
    let Some(Ownership::Assigned(partitions)) = sink.next_change().await.unwrap() else {
        panic!("every partition assigned");
    };
    assert_eq!(partitions, [partition(0), partition(1)]);
    assert_eq!(sink.resume(&partitions).await.unwrap()[0].1, None);
    sink.begin().await.unwrap();
    // Each batch is about 1.2 kB: a second one does not fit a 2 kB segment.
    let (first, second) = (batch(0, 10, 100), batch(10, 10, 200));
    sink.write(&partition(0), first.clone(), 10).await.unwrap();
    sink.write(&partition(0), second.clone(), 10).await.unwrap();
    // Nothing is published before the commit.
    assert!(!dir.path().join("orders-0").exists());
    assert!(!dir.path().join(MANIFEST).exists());
    let positions = Positions::from([(partition(0), 20), (partition(1), 3)]);
    assert!(sink.commit(&positions).await.unwrap());
    let names = ["00000000000000000000.log", "00000000000000000010.log"];
    for (name, bytes) in names.iter().zip([&first, &second]) {
        let published = std::fs::read(dir.path().join("orders-0").join(name)).unwrap();
        assert_eq!(
            &published[..],
            &bytes[..],
            "{name} holds the batch as given"
        );
    }
    let kept = manifest(dir.path());
    let orders = &kept.topics["orders"];
    assert_eq!(orders.partitions, 2);
    assert_eq!(orders.configs["cleanup.policy"], "delete");
    let zero = &orders.partition[&0];
    assert_eq!(zero.next_offset, Some(20));
    assert_eq!(zero.segments.len(), 2);
    assert_eq!(zero.segments[1].base_offset, 10);
    assert_eq!(zero.segments[1].last_offset, 19);
    assert_eq!(zero.segments[1].records, 10);
    assert_eq!(zero.segments[1].bytes, second.len() as u64);
    assert_eq!(
        (
            zero.segments[1].first_timestamp,
            zero.segments[1].max_timestamp
        ),
        (200, 209)
    );
    // A partition whose run held no data (aborted or control batches) still moves on.
    assert_eq!(orders.partition[&1].next_offset, Some(3));
    assert!(orders.partition[&1].segments.is_empty());
    // An aborted transaction leaves nothing.
    sink.begin().await.unwrap();
    sink.write(&partition(0), batch(20, 2, 300), 2)
        .await
        .unwrap();
    sink.abort().await.unwrap();
    sink.close().await.unwrap();
    assert!(!dir
        .path()
        .join("orders-0/00000000000000000020.log")
        .exists());
    assert!(!dir.path().join(".krec-staging").exists());
    assert_eq!(manifest(dir.path()).backup_id, kept.backup_id);
    // Run again, the backup resumes where the manifest says.
    let mut again = sink_again(dir.path()).await;
    again.prepare(&[topic(2)]).await.unwrap();
    let resumed = again.resume(&[partition(0), partition(1)]).await.unwrap();
    assert_eq!(resumed[0].1, Some(20));
    assert_eq!(resumed[1].1, Some(3));
}

async fn sink_again(dir: &std::path::Path) -> BackupSink {
    sink(dir, 2_000).await
}

#[tokio::test]
async fn a_batch_larger_than_a_segment_gets_one_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = sink(dir.path(), 100).await;
    sink.prepare(&[topic(1)]).await.unwrap();
    sink.begin().await.unwrap();
    for base in [0, 10, 20] {
        sink.write(&partition(0), batch(base, 10, 0), 10)
            .await
            .unwrap();
    }
    let positions = Positions::from([(partition(0), 30)]);
    sink.commit(&positions).await.unwrap();
    let kept = manifest(dir.path());
    let bases: Vec<i64> = (kept.topics["orders"].partition[&0].segments.iter())
        .map(|s| s.base_offset)
        .collect();
    assert_eq!(bases, [0, 10, 20]);
}

#[tokio::test]
async fn a_lost_range_is_kept_with_the_commit_not_with_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = sink(dir.path(), 1 << 20).await;
    sink.prepare(&[topic(1)]).await.unwrap();
    sink.begin().await.unwrap();
    sink.lost(&partition(0), 0..5);
    sink.abort().await.unwrap();
    sink.begin().await.unwrap();
    sink.lost(&partition(0), 5..8);
    sink.write(&partition(0), batch(8, 2, 0), 2).await.unwrap();
    sink.commit(&Positions::from([(partition(0), 10)]))
        .await
        .unwrap();
    let lost = &manifest(dir.path()).topics["orders"].partition[&0].lost;
    assert_eq!(lost.len(), 1);
    assert_eq!((lost[0].from, lost[0].to), (5, 8));
}

#[tokio::test]
async fn a_topic_created_again_under_its_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = sink(dir.path(), 1 << 20).await;
    sink.record_topic(&topic(1), Some("id-1")).unwrap();
    sink.begin().await.unwrap();
    sink.commit(&Positions::from([(partition(0), 4)]))
        .await
        .unwrap();
    sink.record_topic(&topic(1), Some("id-1")).unwrap();
    let error = sink.record_topic(&topic(1), Some("id-2")).unwrap_err();
    assert!(error.to_string().contains("created again"), "{error}");
}
