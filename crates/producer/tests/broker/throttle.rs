//! Quotas (KIP-219): a broker answers a Produce over the client's `producer_byte_rate` at
//! once with `throttle_time_ms` and mutes the connection; the producer holds its next request
//! to that broker for that time and counts it in its stats.

use krec_producer::{Producer, ProducerRecord};

use crate::support::{alter_config, live, producer_config, within};

/// The quota, in bytes a second.
const BYTE_RATE: usize = 10_000;
/// Sent at once: a little over what the broker's quota window (its samples, ten seconds and
/// more) lets through, so the last requests are throttled for a second or two.
const RECORDS: usize = 120;
const VALUE_BYTES: usize = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_throttles_the_producer_and_every_record_still_arrives() {
    let broker = live::broker();
    let topic = live::unique_name("producer-throttle");
    broker.create_topic(&topic, 1);
    let client_id = live::unique_name("pgaps-quota");
    let quota = format!("producer_byte_rate={BYTE_RATE}");
    alter_config(&broker, "clients", &client_id, &quota);
    let config = producer_config(&broker.bootstrap, &[("client.id", client_id.as_str())]);
    let producer = within("connect", Producer::connect(config))
        .await
        .expect("connect");
    let value = vec![b'v'; VALUE_BYTES];
    let mut deliveries = Vec::with_capacity(RECORDS);
    for _ in 0..RECORDS {
        let record = ProducerRecord::new(topic.as_str()).value(&value);
        deliveries.push(producer.send(record).await.expect("send"));
    }
    for delivery in deliveries {
        within("a delivery", delivery).await.expect("delivered");
    }
    let stats = producer.stats();
    assert!(stats.throttle_time_ms > 0, "never throttled: {stats:?}");
    assert_eq!(stats.records_acknowledged, RECORDS as u64);
    assert_eq!(stats.retries, 0, "a muted connection timed out: {stats:?}");
    within("close", producer.close()).await.expect("close");
}
