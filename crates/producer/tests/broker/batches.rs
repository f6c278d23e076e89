//! `send_batch` against the suite's broker: the batches real producers wrote to a topic (krec's
//! own producer with lz4, kcat (librdkafka) with zstd: several records, keys, headers,
//! timestamps) are fetched as the broker stored them and sent to another topic, idempotently,
//! and in a committed and an aborted transaction. kcat reads the copy back with A's keys,
//! values, headers and timestamps in A's order (the aborted copy unseen), and the copy's stored
//! batches hold A's records' bytes unchanged after their 61-byte header.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use krec_batch::layout::v2::HEADER_SIZE;
use krec_batch::{BatchWalk, DecodeConfig};
use krec_consumer::{Consumer, ConsumerConfig, StartOffset};
use krec_producer::{Producer, ProducerRecord};

use crate::support::{live, producer_config, within};
use crate::transactions::transactional;

/// Records krec's producer writes, lz4, in one batch (linger): key, value, headers, time.
const KREC_RECORDS: [(&str, &str, i64); 4] = [
    ("k1", "one", 1_700_000_000_001),
    ("k2", "two", 1_700_000_000_002),
    ("k3", "three", 1_700_000_000_003),
    ("k4", "four", 1_700_000_000_004),
];

/// Topic `source` with a batch of krec's producer (lz4) and one of kcat (zstd).
async fn fill_source(bootstrap: &str, source: &str) {
    let config = producer_config(
        bootstrap,
        &[("compression.type", "lz4"), ("linger.ms", "200")],
    );
    let producer = Producer::connect(config).await.expect("connect");
    let mut deliveries = Vec::new();
    for (key, value, timestamp) in KREC_RECORDS {
        let record = ProducerRecord::new(source)
            .partition(0)
            .key(key)
            .value(value)
            .header("trace", format!("t-{key}"))
            .null_header("empty")
            .timestamp(timestamp);
        deliveries.push(producer.send(record).await.expect("send"));
    }
    for delivery in deliveries {
        within("delivery", delivery).await.expect("delivered");
    }
    producer.close().await.expect("close");
    let mut kcat = Command::new("kcat")
        .args(["-P", "-b", bootstrap, "-t", source, "-p", "0", "-z", "zstd"])
        .args(["-K", ":", "-H", "source=kcat", "-H", "dup=1", "-H", "dup=2"])
        .args(["-X", "linger.ms=200"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kcat (installed by scripts/install-deps.sh)");
    let input = "z1:zstd one\nz2:zstd two\nz3:zstd three\n";
    let mut stdin = kcat.stdin.take().expect("kcat's stdin");
    stdin.write_all(input.as_bytes()).expect("write to kcat");
    drop(stdin);
    let output = kcat.wait_with_output().expect("kcat");
    assert!(
        output.status.success(),
        "kcat -P: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The data batches of partition 0 of `topic`, each as the broker stored it (a slice of
/// the fetch response), read_uncommitted.
async fn stored_batches(bootstrap: &str, topic: &str) -> Vec<Bytes> {
    let mut config =
        ConsumerConfig::new(ConsumerConfig::parse_bootstrap(bootstrap).expect("bootstrap"));
    config.max_wait = Duration::from_millis(100);
    let mut consumer = Consumer::connect(config).await.expect("consumer connect");
    consumer
        .assign_topic(topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    let decode = DecodeConfig::default();
    let mut batches = Vec::new();
    while let Some(chunk) = within("fetching", consumer.next_chunk())
        .await
        .expect("next_chunk")
    {
        let records = chunk.records_bytes();
        let mut walk = BatchWalk::new(records, &decode);
        while let Some(summary) = walk.next_summary() {
            let summary = summary.expect("a sound batch");
            if !summary.control {
                batches.push(records.slice(summary.position..summary.position + summary.size));
            }
        }
    }
    consumer.close().await;
    batches
}

/// Every record of partition 0 of `topic` as a read_committed kcat prints it: key, value,
/// timestamp, headers.
fn kcat_records(bootstrap: &str, topic: &str) -> Vec<String> {
    let output = Command::new("kcat")
        .args(["-C", "-b", bootstrap, "-t", topic, "-p", "0", "-e", "-q"])
        .args(["-X", "isolation.level=read_committed"])
        .args(["-f", "%k|%s|%T|%h\n"])
        .stdin(Stdio::null())
        .output()
        .expect("run kcat");
    assert!(
        output.status.success(),
        "kcat -C: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Sends every batch to partition 0 of `target`; the offset each was given.
async fn send_all(producer: &Producer, target: &str, batches: &[Bytes]) -> Vec<i64> {
    let mut deliveries = Vec::new();
    for batch in batches {
        let delivery = producer.send_batch(target, 0, batch.clone()).await;
        deliveries.push(delivery.expect("send_batch"));
    }
    let mut offsets = Vec::new();
    for delivery in deliveries {
        let delivered = within("delivery", delivery).await.expect("delivered");
        offsets.push(delivered.offset());
    }
    offsets
}

/// The source's batches and records: two batches or more (lz4 and zstd), kcat's view.
async fn source(broker: &live::LiveBroker) -> (Vec<Bytes>, Vec<String>) {
    let source = live::unique_name("sendbatch-a");
    broker.create_topic(&source, 1);
    fill_source(&broker.bootstrap, &source).await;
    let batches = stored_batches(&broker.bootstrap, &source).await;
    let records = kcat_records(&broker.bootstrap, &source);
    let codecs: Vec<_> = batches.iter().map(|batch| body(batch).1).collect();
    assert!(
        codecs.contains(&krec_batch::Compression::Lz4)
            && codecs.contains(&krec_batch::Compression::Zstd),
        "{codecs:?}"
    );
    assert!(
        batches.iter().all(|batch| body(batch).2 > 1),
        "several records per batch"
    );
    assert_eq!(records.len(), KREC_RECORDS.len() + 3, "{records:?}");
    assert!(
        records[0].starts_with("k1|one|1700000000001|trace=t-k1"),
        "{records:?}"
    );
    (batches, records)
}

/// The records of `batch` (its bytes after the header) and its codec and record count.
fn body(batch: &[u8]) -> (&[u8], krec_batch::Compression, u32) {
    let decode = DecodeConfig::default();
    let read = BatchWalk::new(batch, &decode).next().expect("a batch");
    let read = read.expect("a batch whose CRC holds");
    (
        &batch[HEADER_SIZE..],
        read.compression(),
        read.record_count(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_batches_copied_idempotently_keep_their_records_bytes() {
    let broker = live::broker();
    let (batches, records) = source(&broker).await;
    let target = live::unique_name("sendbatch-b");
    broker.create_topic(&target, 1);
    let producer = Producer::connect(producer_config(&broker.bootstrap, &[]))
        .await
        .expect("connect");
    let offsets = send_all(&producer, &target, &batches).await;
    let stats = producer.stats();
    producer.close().await.expect("close");

    let mut expected_offset = 0;
    for (batch, offset) in batches.iter().zip(&offsets) {
        assert_eq!(*offset, expected_offset, "each batch's first offset");
        expected_offset += i64::from(body(batch).2);
    }
    assert_eq!(stats.records_acknowledged, records.len() as u64);
    assert_eq!(stats.batches_acknowledged, batches.len() as u64);
    assert_eq!(kcat_records(&broker.bootstrap, &target), records);
    let copies = stored_batches(&broker.bootstrap, &target).await;
    assert_eq!(copies.len(), batches.len());
    for (copy, batch) in copies.iter().zip(&batches) {
        assert_eq!(body(copy), body(batch), "records untouched");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_batches_copied_in_a_committed_and_an_aborted_transaction() {
    let broker = live::broker();
    let (batches, records) = source(&broker).await;
    let target = live::unique_name("sendbatch-txn");
    broker.create_topic(&target, 1);
    let id = live::unique_name("sendbatch-id");
    let producer = transactional(&broker.bootstrap, &id).await;
    producer.begin().expect("begin");
    send_all(&producer, &target, &batches).await;
    within("commit", producer.commit()).await.expect("commit");
    producer.begin().expect("begin");
    send_all(&producer, &target, &batches).await;
    within("abort", producer.abort()).await.expect("abort");
    producer.close().await.expect("close");

    let mut read = Vec::new();
    for _ in 0..50 {
        read = kcat_records(&broker.bootstrap, &target);
        if read == records {
            break;
        }
        // The markers are written after EndTxn answers: the last stable offset may lag.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(read, records, "the committed copy alone");
    let copies = stored_batches(&broker.bootstrap, &target).await;
    assert_eq!(
        copies.len(),
        2 * batches.len(),
        "committed and aborted copies"
    );
    for (copy, batch) in copies.iter().zip(batches.iter().cycle()) {
        assert_eq!(body(copy), body(batch), "records untouched");
        let decode = DecodeConfig::default();
        let read = BatchWalk::new(copy, &decode).next().unwrap().unwrap();
        assert!(read.is_transactional(), "stamped transactional");
    }
}
