//! Connections cut while records flow, through a Toxiproxy lane: with idempotence every record
//! is delivered exactly once, each partition in send order.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use krec_producer::{Producer, ProducerRecord};

use crate::support::{live, producer_config, read_back, within, Lane};

/// 30,000 keyed records sent while the lane resets every connection three times: each record
/// read back once, at the offset its delivery gave, and each key's records in send order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_connections_lose_reorder_and_duplicate_nothing() {
    const RECORDS: usize = 30_000;
    let broker = live::broker();
    let lane = Lane::take(2);
    let topic = live::unique_name("producer-cut");
    broker.create_topic(&topic, 3);
    let properties = [
        ("linger.ms", "2"),
        ("batch.size", "4096"),
        ("request.timeout.ms", "3000"),
        ("retry.backoff.ms", "50"),
    ];
    let producer = Arc::new(
        Producer::connect(producer_config(&lane.bootstrap, &properties))
            .await
            .expect("connect"),
    );
    let sending = {
        let producer = producer.clone();
        let topic = topic.clone();
        tokio::spawn(async move {
            let mut deliveries = Vec::with_capacity(RECORDS);
            for i in 0..RECORDS {
                let key = format!("key-{}", i % 100);
                let record = ProducerRecord::new(topic.as_str())
                    .key(&key)
                    .value(i.to_string());
                deliveries.push(producer.send(record).await.expect("send"));
                if i % 1000 == 0 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            deliveries
        })
    };
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        lane.add_toxic("cut", "reset_peer", "downstream", r#"{"timeout":0}"#);
        tokio::time::sleep(Duration::from_millis(100)).await;
        lane.remove_toxic("cut");
    }
    let deliveries = within("sending", sending).await.expect("sending task");
    let mut offsets = Vec::with_capacity(RECORDS);
    for delivery in deliveries {
        let delivered = within("delivery", delivery).await.expect("delivered");
        offsets.push((delivered.partition(), delivered.offset()));
    }
    within("close", producer.close()).await.expect("close");
    assert!(producer.stats().retries > 0, "no connection was cut");

    let read = read_back(&broker.bootstrap, &topic).await;
    let mut at: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for (partition, records) in &read {
        for record in records {
            let value = String::from_utf8(record.value.clone().unwrap()).unwrap();
            at.insert((*partition, record.offset), value.parse().unwrap());
        }
    }
    let total: usize = read.values().map(Vec::len).sum();
    assert_eq!(total, RECORDS, "records read back (duplicates or losses)");
    let mut last_of_key: BTreeMap<usize, i64> = BTreeMap::new();
    for (i, (partition, offset)) in offsets.into_iter().enumerate() {
        assert_eq!(at.get(&(partition, offset)), Some(&i), "record {i}");
        if let Some(before) = last_of_key.insert(i % 100, offset) {
            assert!(before < offset, "key-{} out of send order", i % 100);
        }
    }
}
