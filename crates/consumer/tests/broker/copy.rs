//! A copy's reading side against the real broker, as `krec mirror` reads: a transactional
//! topic (an aborted transaction between two committed ones) read with `read_committed`
//! through `data_batches`, each batch forwarded (re-stamped) or re-encoded as `copy_shape`
//! says, produced by hand to a second topic under an idempotent identity. A CreateTime source
//! forwards every batch as it came; a LogAppendTime source re-encodes every one, and the
//! broker takes the re-encoded batches; a copy that starts inside a batch re-encodes it. Either copy then holds exactly the committed records,
//! timestamps included (the source broker's append times, as CreateTime).

use std::sync::Arc;

use bytes::Bytes;
use krec_client::produce::{produce, Acks, ProduceParams, ProducePartition, ProduceTopic};
use krec_client::producer_id::{init_producer_id, ProducerIdentity};
use krec_client::{Connection, ConnectionSettings};
use krec_consumer::krec_batch::{
    reencode, restamp, CopyShape, Error as BatchError, ProducerFields, ReencodeReason,
    TimestampType,
};
use krec_consumer::{Consumer, StartOffset};

use crate::support::{config, live, within, LiveBroker, Record};

/// A record as read: timestamp, its type, key, value, headers.
type Read = (
    i64,
    TimestampType,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
);

/// Every record of partition 0 of `topic` from `start`, read to its end with `read_committed`.
async fn read_all(broker: &LiveBroker, topic: &str, start: StartOffset) -> Vec<Read> {
    let mut settings = config(broker);
    settings.read_committed = true;
    let mut consumer = Consumer::connect(settings).await.expect("connect");
    consumer
        .assign_topic(topic, start)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    let mut read = Vec::new();
    while let Some(chunk) = within("next_chunk", consumer.next_chunk())
        .await
        .expect("next_chunk")
    {
        for record in chunk.records() {
            let record = record.expect("a record that decodes");
            read.push((
                record.timestamp(),
                record.timestamp_type(),
                record.key().map(<[u8]>::to_vec),
                record.value().map(<[u8]>::to_vec),
                (record.headers().iter())
                    .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                    .collect(),
            ));
        }
    }
    read
}

/// Where the copy writes: partition 0 of `topic`, under an idempotent identity.
struct Target {
    connection: Connection,
    topic: Arc<str>,
    identity: ProducerIdentity,
    sequence: i32,
}

impl Target {
    /// Re-stamps `batch` (offset deltas 0..count-1) with the next sequence and produces it.
    async fn send(&mut self, mut batch: Vec<u8>, count: u32) {
        let fields = ProducerFields::idempotent(
            self.identity.producer_id,
            self.identity.producer_epoch,
            self.sequence,
        );
        restamp(&mut batch, 0, fields).expect("a whole v2 batch");
        self.sequence += count as i32;
        let topics = [ProduceTopic {
            name: self.topic.clone(),
            topic_id: uuid::Uuid::nil(),
            partitions: vec![ProducePartition {
                partition: 0,
                batch: Bytes::from(batch),
            }],
        }];
        let params = ProduceParams {
            acks: Acks::All,
            timeout_ms: 30_000,
        };
        let answer = produce(&mut self.connection, params, &topics)
            .await
            .expect("produce");
        if let Err(error) = &answer.partitions[0].result {
            panic!("the target refused a copied batch: {error}");
        }
    }
}

/// Copies partition 0 of `source` from `start` to `target` as a mirror would; the shapes
/// met, in order.
async fn copy(
    broker: &LiveBroker,
    source: &str,
    start: StartOffset,
    target: &str,
) -> Vec<CopyShape> {
    let mut connection = Connection::connect(&broker.bootstrap, &ConnectionSettings::default())
        .await
        .expect("connect to the target");
    let identity = init_producer_id(&mut connection, None)
        .await
        .expect("a producer id");
    let mut target = Target {
        connection,
        topic: Arc::from(target),
        identity,
        sequence: 0,
    };
    let mut settings = config(broker);
    settings.read_committed = true;
    let mut consumer = Consumer::connect(settings).await.expect("connect");
    consumer
        .assign_topic(source, start)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    let mut shapes = Vec::new();
    while let Some(chunk) = within("next_chunk", consumer.next_chunk())
        .await
        .expect("next_chunk")
    {
        for batch in chunk.data_batches() {
            let batch = batch.expect("a checked batch");
            let shape = batch.summary.copy_shape(chunk.fetch_offset());
            shapes.push(shape);
            match shape {
                CopyShape::Forward => {
                    let count = batch.summary.record_count;
                    target.send(batch.bytes.to_vec(), count).await;
                }
                CopyShape::Reencode(_) => {
                    let mut written = Vec::new();
                    let config = chunk.decode_config();
                    reencode(&batch.bytes, chunk.fetch_offset(), 1 << 20, config, |out| {
                        written.push((out.batch.to_vec(), out.record_count));
                        Ok::<_, BatchError>(())
                    })
                    .expect("re-encoded");
                    for (bytes, count) in written {
                        target.send(bytes, count).await;
                    }
                }
                _ => {}
            }
        }
    }
    shapes
}

/// Three transactions of 6 records, the middle one aborted; each flushed as one batch per
/// transaction or so (the producer lingers).
fn produce_transactions(broker: &LiveBroker, topic: &str) {
    let step = |name: &str| -> Vec<Record> {
        (0..6)
            .map(|i| Record::new(0, &format!("k{i}"), &format!("{name}-{i}")).header("n", name))
            .collect()
    };
    broker.produce_transactions(
        topic,
        Some(&live::unique_name("rawbatch-copy-txn")),
        &[
            (true, step("committed-a")),
            (false, step("aborted")),
            (true, step("committed-b")),
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_time_topic_is_copied_batch_for_batch_as_it_came() {
    let broker = live::broker();
    let source = live::unique_name("rawbatch-copy-create");
    let target = live::unique_name("rawbatch-copy-create-to");
    broker.create_topic(&source, 1);
    broker.create_topic(&target, 1);
    produce_transactions(&broker, &source);
    let shapes = copy(&broker, &source, StartOffset::Beginning, &target).await;
    assert!(!shapes.is_empty());
    assert!(
        shapes.iter().all(|s| *s == CopyShape::Forward),
        "{shapes:?}"
    );
    let read = read_all(&broker, &source, StartOffset::Beginning).await;
    assert_eq!(read.len(), 12, "the aborted transaction left out");
    assert_eq!(
        read_all(&broker, &target, StartOffset::Beginning).await,
        read
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_append_time_topic_is_reencoded_with_the_brokers_times() {
    let broker = live::broker();
    let source = live::unique_name("rawbatch-copy-append");
    let target = live::unique_name("rawbatch-copy-append-to");
    broker.kafka_sh(
        "topic",
        &[
            "create",
            &source,
            "--config",
            "message.timestamp.type=LogAppendTime",
        ],
    );
    broker.create_topic(&target, 1);
    produce_transactions(&broker, &source);
    let shapes = copy(&broker, &source, StartOffset::Beginning, &target).await;
    let reencoded = CopyShape::Reencode(ReencodeReason::LogAppendTime);
    assert!(!shapes.is_empty());
    assert!(shapes.iter().all(|s| *s == reencoded), "{shapes:?}");
    let read = read_all(&broker, &source, StartOffset::Beginning).await;
    assert_eq!(read.len(), 12, "the aborted transaction left out");
    assert!(read.iter().all(|r| r.1 == TimestampType::LogAppendTime));
    let as_create_time: Vec<Read> = read
        .into_iter()
        .map(|(timestamp, _, key, value, headers)| {
            (timestamp, TimestampType::CreateTime, key, value, headers)
        })
        .collect();
    assert_eq!(
        read_all(&broker, &target, StartOffset::Beginning).await,
        as_create_time
    );
}

/// A copy that starts inside a batch (a fetch from offset 2 gets the batch from offset 0)
/// re-encodes that batch from offset 2 on, and forwards the batches after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_that_starts_inside_a_batch_leaves_the_records_before_it_out() {
    let broker = live::broker();
    let source = live::unique_name("rawbatch-copy-inside");
    let target = live::unique_name("rawbatch-copy-inside-to");
    broker.create_topic(&source, 1);
    broker.create_topic(&target, 1);
    produce_transactions(&broker, &source);
    let shapes = copy(&broker, &source, StartOffset::Offset(2), &target).await;
    // The producer sends a transaction's six records as one batch (they go out within its
    // linger): the copy enters it at its third record.
    let inside = CopyShape::Reencode(ReencodeReason::StartsBeforeFrom);
    assert_eq!(shapes.first(), Some(&inside), "{shapes:?}");
    assert!(
        shapes[1..].iter().all(|s| *s == CopyShape::Forward),
        "{shapes:?}"
    );
    let read = read_all(&broker, &source, StartOffset::Offset(2)).await;
    assert_eq!(read.len(), 10, "the committed records from offset 2");
    assert_eq!(
        read_all(&broker, &target, StartOffset::Beginning).await,
        read
    );
}
