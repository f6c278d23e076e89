//! A transactional producer under Transactions v1 against krec-testkit's scripted fake
//! broker, for refusals a real broker gives only with ACLs or races: AddPartitionsToTxn
//! refusing the partition (TRANSACTION_ABORTABLE dooms the transaction, PRODUCER_FENCED the
//! producer). The refused batch never goes out. And a stored batch (`send_batch`) joining a
//! v1 transaction. Needs no Kafka.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, BrokerId, EndTxnRequest,
    EndTxnResponse, FindCoordinatorResponse, InitProducerIdRequest, InitProducerIdResponse,
    ProduceRequest, ProduceResponse, ProducerId,
};
use kafka_protocol::protocol::StrBytes;
use krec_batch::{BatchWalk, DecodeConfig};
use krec_producer::{Error, Producer, ProducerConfig, ProducerRecord};
use krec_testkit::broker::{self, answers, Reply, Request};

/// TRANSACTION_ABORTABLE: the transaction must abort; the producer goes on.
const TRANSACTION_ABORTABLE: i16 = 120;
/// PRODUCER_FENCED: a newer producer with the same transactional id took over.
const PRODUCER_FENCED: i16 = 90;

/// The transactional requests the fake broker took, in order, with the producer epoch each
/// carried (a Produce also its base sequence).
#[derive(Default)]
struct Seen {
    calls: Vec<String>,
    /// What the next AddPartitionsToTxn answers for each partition (then 0).
    refusal: i16,
}

fn script(seen: Arc<Mutex<Seen>>) -> impl FnMut(&Request) -> Reply + Send + 'static {
    move |request| {
        let mut seen = seen.lock().unwrap();
        match request.api_key {
            ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
                (ApiKey::Produce, 3, 11),
                (ApiKey::Metadata, 1, 12),
                (ApiKey::FindCoordinator, 1, 3),
                (ApiKey::InitProducerId, 0, 4),
                (ApiKey::AddPartitionsToTxn, 0, 3),
                (ApiKey::EndTxn, 0, 3),
                (ApiKey::ApiVersions, 0, 3),
            ])),
            ApiKey::Metadata => request.answer(&answers::metadata(request.port, &[("t", 1)])),
            ApiKey::FindCoordinator => request.answer(
                &FindCoordinatorResponse::default()
                    .with_node_id(BrokerId(answers::NODE_ID))
                    .with_host(StrBytes::from_static_str("127.0.0.1"))
                    .with_port(i32::from(request.port)),
            ),
            ApiKey::InitProducerId => {
                let asked: InitProducerIdRequest = request.decode();
                // The first identity, then (KIP-360, after an abort) the next epoch.
                let epoch = asked.producer_epoch + 1;
                seen.calls.push(format!("InitProducerId -> {epoch}"));
                let answer = InitProducerIdResponse::default()
                    .with_producer_id(ProducerId(7))
                    .with_producer_epoch(epoch);
                request.answer(&answer)
            }
            ApiKey::AddPartitionsToTxn => {
                let asked: AddPartitionsToTxnRequest = request.decode();
                let code = std::mem::take(&mut seen.refusal);
                let epoch = asked.v3_and_below_producer_epoch;
                seen.calls
                    .push(format!("AddPartitionsToTxn {epoch} -> {code}"));
                let topics = asked
                    .v3_and_below_topics
                    .iter()
                    .map(|topic| {
                        let partitions = topic
                            .partitions
                            .iter()
                            .map(|&p| {
                                AddPartitionsToTxnPartitionResult::default()
                                    .with_partition_index(p)
                                    .with_partition_error_code(code)
                            })
                            .collect();
                        AddPartitionsToTxnTopicResult::default()
                            .with_name(topic.name.clone())
                            .with_results_by_partition(partitions)
                    })
                    .collect();
                let answer = AddPartitionsToTxnResponse::default()
                    .with_results_by_topic_v3_and_below(topics);
                request.answer(&answer)
            }
            ApiKey::Produce => {
                let produce: ProduceRequest = request.decode();
                let topic = &produce.topic_data[0];
                let partition = &topic.partition_data[0];
                let bytes = partition.records.clone().expect("a batch");
                let config = DecodeConfig::default();
                let batch = BatchWalk::new(&bytes, &config)
                    .next()
                    .expect("a batch")
                    .expect("a batch that decodes");
                let (epoch, sequence) = (batch.producer_epoch(), batch.base_sequence());
                seen.calls.push(format!("Produce {epoch} seq {sequence}"));
                let answer = PartitionProduceResponse::default()
                    .with_index(partition.index)
                    .with_base_offset(100);
                let topic = TopicProduceResponse::default()
                    .with_name(topic.name.clone())
                    .with_partition_responses(vec![answer]);
                request.answer(&ProduceResponse::default().with_responses(vec![topic]))
            }
            ApiKey::EndTxn => {
                let asked: EndTxnRequest = request.decode();
                let what = if asked.committed { "commit" } else { "abort" };
                seen.calls
                    .push(format!("EndTxn {what} {}", asked.producer_epoch));
                request.answer(&EndTxnResponse::default())
            }
            other => panic!("the producer asked for {other:?}"),
        }
    }
}

/// A transactional producer of the fake broker, its transactions initialized.
async fn producer(seen: &Arc<Mutex<Seen>>) -> Producer {
    let address = broker::start(script(seen.clone())).await;
    let config = ProducerConfig::from_properties([
        ("transactional.id", "fake-txn"),
        ("retry.backoff.ms", "10"),
        ("linger.ms", "1"),
    ])
    .unwrap()
    .with("bootstrap.servers", &address)
    .unwrap();
    let producer = Producer::connect(config).await.expect("connect");
    within(producer.init_transactions()).await.expect("init");
    producer
}

async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .expect("in time")
}

/// A record of the open transaction, and its delivery's outcome.
async fn send_one(producer: &Producer, value: &str) -> Result<i64, Error> {
    let record = ProducerRecord::new("t")
        .partition(0)
        .value(value.as_bytes());
    let delivery = producer.send(record).await?;
    within(delivery).await.map(|delivered| delivered.offset())
}

/// A stored batch sent with `send_batch` in a v1 transaction: the partition joins it with
/// AddPartitionsToTxn first; the record sent before it goes out before it, and it takes the
/// sequences after the record's, stamped with the transaction's epoch.
#[tokio::test]
async fn a_copied_batch_joins_a_v1_transaction_behind_the_record_before_it() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let producer = producer(&seen).await;
    producer.begin().expect("begin");
    let header: &[(&[u8], Option<&[u8]>)] = &[(b"h", Some(b"1"))];
    let stored = krec_batch::encode::BatchBuilder::new(500)
        .compression(krec_batch::Compression::Zstd)
        .producer(3, 9, 40)
        .record(Some(b"k1"), Some(b"v1"), header)
        .record(Some(b"k2"), Some(b"v2"), header)
        .build();
    let record = ProducerRecord::new("t").partition(0).value(b"before");
    let before = producer.send(record).await.expect("send");
    let copied = producer.send_batch("t", 0, stored.into()).await;
    let copied = copied.expect("send_batch");
    assert_eq!(within(before).await.expect("delivered").offset(), 100);
    assert_eq!(within(copied).await.expect("delivered").offset(), 100);
    within(producer.commit()).await.expect("commit");
    assert_eq!(
        seen.lock().unwrap().calls,
        [
            "InitProducerId -> 0",
            "AddPartitionsToTxn 0 -> 0",
            "Produce 0 seq 0",
            "Produce 0 seq 1",
            "EndTxn commit 0",
        ]
    );
}

/// TRANSACTION_ABORTABLE for the partition: its batch fails unsent, commit says abort, the
/// abort ends the transaction and bumps the epoch (v1), and the next transaction adds the
/// partition again and commits.
#[tokio::test]
async fn a_refused_partition_dooms_only_the_transaction() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let producer = producer(&seen).await;
    seen.lock().unwrap().refusal = TRANSACTION_ABORTABLE;
    producer.begin().expect("begin");
    let refused = send_one(&producer, "refused").await.unwrap_err();
    assert!(
        refused.to_string().contains("TRANSACTION_ABORTABLE"),
        "{refused}"
    );
    let doomed = within(producer.commit()).await.unwrap_err();
    assert!(
        matches!(doomed, Error::TransactionAbortable { .. }),
        "{doomed}"
    );
    within(producer.abort()).await.expect("abort");

    producer.begin().expect("begin after the abort");
    assert_eq!(send_one(&producer, "next").await.expect("delivered"), 100);
    within(producer.commit()).await.expect("commit");
    assert_eq!(
        seen.lock().unwrap().calls,
        [
            "InitProducerId -> 0",
            "AddPartitionsToTxn 0 -> 120",
            "EndTxn abort 0",
            "InitProducerId -> 1",
            "AddPartitionsToTxn 1 -> 0",
            "Produce 1 seq 0",
            "EndTxn commit 1",
        ]
    );
}

/// PRODUCER_FENCED for the partition: the batch fails unsent and the producer stops for good,
/// naming the fence; nothing more is asked of the broker.
#[tokio::test]
async fn a_fenced_partition_add_stops_the_producer() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let producer = producer(&seen).await;
    seen.lock().unwrap().refusal = PRODUCER_FENCED;
    producer.begin().expect("begin");
    let refused = send_one(&producer, "zombie").await.unwrap_err();
    assert!(refused.to_string().contains("PRODUCER_FENCED"), "{refused}");
    let fenced = within(producer.commit()).await.unwrap_err();
    assert!(
        matches!(fenced, Error::Fenced { .. } | Error::Stopped { .. }),
        "{fenced:?}"
    );
    assert!(within(producer.abort()).await.is_err(), "stopped for good");
    assert!(producer.begin().is_err(), "stopped for good");
    assert_eq!(
        seen.lock().unwrap().calls,
        ["InitProducerId -> 0", "AddPartitionsToTxn 0 -> 90"]
    );
}
