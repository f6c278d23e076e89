//! Quotas (KIP-219): a broker answers a Produce over the client's `producer_byte_rate` at
//! once with `throttle_time_ms` and mutes the connection; the producer holds its next request
//! to that broker for that time and counts it in its stats.

use krec_producer::{Producer, ProducerRecord};

use crate::support::{alter_config, live, producer_config, within};

/// The quota, in bytes a second: one request of a round is ~60 s of it, so the broker's rate
/// (bytes over its quota window, 10 s and more) is far over it whatever the machine's pace.
const BYTE_RATE: usize = 2_000;
/// Sent in one request a round (linger and batch.size hold them together).
const RECORDS: usize = 120;
const VALUE_BYTES: usize = 1_000;
/// Rounds tried: the quota reaches the broker's quota manager a moment after ConfigCommand
/// returns, so a first round may pass unthrottled.
const ROUNDS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_throttles_the_producer_and_every_record_still_arrives() {
    let broker = live::broker();
    let topic = live::unique_name("producer-throttle");
    broker.create_topic(&topic, 1);
    let client_id = live::unique_name("pgaps-quota");
    let quota = format!("producer_byte_rate={BYTE_RATE}");
    alter_config(&broker, "clients", &client_id, &quota);
    let settings = [
        ("client.id", client_id.as_str()),
        ("linger.ms", "200"),
        ("batch.size", "1048576"),
    ];
    let config = producer_config(&broker.bootstrap, &settings);
    let producer = within("connect", Producer::connect(config))
        .await
        .expect("connect");
    let value = vec![b'v'; VALUE_BYTES];
    let mut sent = 0;
    // A throttled answer comes at once; the producer then holds its next request to that
    // broker, so the rounds stop at the first throttled one.
    for _ in 0..ROUNDS {
        let mut deliveries = Vec::with_capacity(RECORDS);
        for _ in 0..RECORDS {
            let record = ProducerRecord::new(topic.as_str()).value(&value);
            deliveries.push(producer.send(record).await.expect("send"));
        }
        sent += RECORDS;
        for delivery in deliveries {
            within("a delivery", delivery).await.expect("delivered");
        }
        if producer.stats().throttle_time_ms > 0 {
            break;
        }
    }
    let stats = producer.stats();
    assert!(stats.throttle_time_ms > 0, "never throttled: {stats:?}");
    assert_eq!(stats.records_acknowledged, sent as u64);
    assert_eq!(stats.retries, 0, "a muted connection timed out: {stats:?}");
    within("close", producer.close()).await.expect("close");
}
