//! Heap allocations of the whole write path (send, batch, Produce, acknowledgement, the
//! deliveries resolved), counted on one thread: the producer runs on the test's
//! current-thread runtime, so its tasks and connections allocate there too.

use krec_producer::{Producer, ProducerRecord};

use crate::support::{live, producer_config, within};
use crate::ALLOCATOR;

const RECORDS: usize = 20_000;

/// Records with a key, a value and two headers, in the steady state: fewer heap allocations
/// than records (what is allocated is per batch and per request, not per record).
#[tokio::test]
async fn the_write_path_allocates_per_batch_not_per_record() {
    let broker = live::broker();
    let topic = live::unique_name("producer-allocations");
    broker.create_topic(&topic, 2);
    let config = producer_config(&broker.bootstrap, &[("linger.ms", "5")]);
    let producer = Producer::connect(config).await.expect("connect");
    let keys: Vec<String> = (0..100).map(|i| format!("key-{i}")).collect();
    let value = vec![b'v'; 150];
    within("warm-up", send_all(&producer, &topic, &keys, &value)).await;
    let before = ALLOCATOR.thread();
    within("measured", send_all(&producer, &topic, &keys, &value)).await;
    let allocations = (ALLOCATOR.thread() - before).allocations;
    println!("{allocations} allocations for {RECORDS} records");
    assert!(
        allocations < RECORDS as u64,
        "{allocations} allocations for {RECORDS} records"
    );
    producer.close().await.expect("close");
}

/// Sends `RECORDS` records, flushes, and waits for the last delivery.
async fn send_all(producer: &Producer, topic: &str, keys: &[String], value: &[u8]) {
    let mut last = None;
    for i in 0..RECORDS {
        let record = ProducerRecord::new(topic)
            .key(&keys[i % keys.len()])
            .value(value)
            .header("trace", b"00-0af7651916cd43dd8448eb211c80319c")
            .header("n", b"1");
        last = Some(producer.send(record).await.expect("send"));
    }
    producer.flush().await.expect("flush");
    last.expect("a delivery").await.expect("delivered");
}
