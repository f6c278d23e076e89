//! krec-producer against krec-testkit's scripted fake broker, for states a real broker cannot
//! be brought to in a test: a producer id whose epoch is exhausted (i16::MAX), and (in
//! `txn_v1`) a Transactions v1 partition add refused, and a stored batch joining a v1
//! transaction. Needs no Kafka.

#[path = "fake_broker/txn_v1.rs"]
mod txn_v1;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{
    ApiKey, InitProducerIdResponse, ProduceRequest, ProduceResponse, ProducerId,
};
use krec_batch::{BatchWalk, DecodeConfig};
use krec_producer::{Producer, ProducerConfig, ProducerRecord};
use krec_testkit::broker::{self, answers, Reply, Request};

/// UNKNOWN_PRODUCER_ID: the broker lost the producer's state; the producer bumps its epoch.
const UNKNOWN_PRODUCER_ID: i16 = 59;

/// What the fake broker saw: InitProducerId requests, and each Produce batch's producer id,
/// epoch and base sequence.
#[derive(Default)]
struct Seen {
    init_producer_ids: usize,
    batches: Vec<(i64, i16, i32)>,
}

fn script(seen: Arc<Mutex<Seen>>) -> impl FnMut(&Request) -> Reply + Send + 'static {
    move |request| {
        let mut seen = seen.lock().unwrap();
        match request.api_key {
            ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
                (ApiKey::Produce, 3, 12),
                (ApiKey::Metadata, 1, 12),
                (ApiKey::InitProducerId, 0, 4),
                (ApiKey::ApiVersions, 0, 3),
            ])),
            ApiKey::Metadata => request.answer(&answers::metadata(request.port, &[("t", 1)])),
            ApiKey::InitProducerId => {
                seen.init_producer_ids += 1;
                // The first id has no epoch left; the second is new.
                let (id, epoch) = match seen.init_producer_ids {
                    1 => (7, i16::MAX),
                    _ => (8, 0),
                };
                let answer = InitProducerIdResponse::default()
                    .with_producer_id(ProducerId(id))
                    .with_producer_epoch(epoch);
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
                let fields = (
                    batch.producer_id(),
                    batch.producer_epoch(),
                    batch.base_sequence(),
                );
                seen.batches.push(fields);
                // The first batch: the broker lost the producer (an epoch bump is due).
                let error_code = if seen.batches.len() == 1 {
                    UNKNOWN_PRODUCER_ID
                } else {
                    0
                };
                let answer = PartitionProduceResponse::default()
                    .with_index(partition.index)
                    .with_error_code(error_code)
                    .with_base_offset(if error_code == 0 { 100 } else { -1 });
                let topic = TopicProduceResponse::default()
                    .with_name(topic.name.clone())
                    .with_partition_responses(vec![answer]);
                request.answer(&ProduceResponse::default().with_responses(vec![topic]))
            }
            other => panic!("the producer asked for {other:?}"),
        }
    }
}

/// At epoch i16::MAX an epoch bump is impossible: the producer asks InitProducerId for a new
/// producer id (as the Java client does) and sends the batch again with it, from sequence 0.
#[tokio::test]
async fn an_exhausted_epoch_takes_a_new_producer_id() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let address = broker::start(script(seen.clone())).await;
    let config = ProducerConfig::from_properties([("retry.backoff.ms", "10")])
        .unwrap()
        .with("bootstrap.servers", &address)
        .unwrap();
    let producer = Producer::connect(config).await.expect("connect");
    let record = ProducerRecord::new("t").key("k").value("v");
    let delivery = producer.send(record).await.expect("send");
    let delivered = tokio::time::timeout(Duration::from_secs(10), delivery)
        .await
        .expect("delivered in time")
        .expect("delivered");
    assert_eq!(delivered.offset(), 100);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.init_producer_ids, 2, "a new producer id was asked for");
    assert_eq!(seen.batches, [(7, i16::MAX, 0), (8, 0, 0)]);
}
