//! Records delivered: the front door as the issue writes it, many keyed records each in its
//! murmur2 partition in send order exactly once with the offsets their futures gave, every
//! codec read back as sent.

use std::collections::BTreeMap;

use krec_client::partitioner::Partitioner;
use krec_producer::{Producer, ProducerRecord};

use crate::support::{live, producer_config, read_back, within};

/// The program: connect, send one record with a key, a value and a header, await its
/// delivery, flush, close; the record reads back at the offset the delivery gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_front_door_delivers_a_record_where_it_says() {
    let broker = live::broker();
    let topic = live::unique_name("producer-door");
    broker.create_topic(&topic, 3);
    let config = producer_config(&broker.bootstrap, &[]);
    let producer = within("connect", Producer::connect(config))
        .await
        .expect("connect");
    let record = ProducerRecord::new(topic.as_str())
        .key(b"k1")
        .value(b"v1")
        .header("traceparent", b"00-1");
    let delivery = within("send", producer.send(record)).await.expect("send");
    let delivered = within("delivery", delivery).await.expect("delivered");
    assert_eq!(delivered.topic(), topic);
    assert_eq!(
        delivered.partition(),
        Partitioner::Murmur2.partition(b"k1", 3)
    );
    within("flush", producer.flush()).await.expect("flush");
    within("close", producer.close()).await.expect("close");

    let read = read_back(&broker.bootstrap, &topic).await;
    let records = &read[&delivered.partition()];
    assert_eq!(records.len(), 1, "{read:?}");
    assert_eq!(records[0].offset, delivered.offset());
    assert_eq!(records[0].key.as_deref(), Some(&b"k1"[..]));
    assert_eq!(records[0].value.as_deref(), Some(&b"v1"[..]));
    assert_eq!(
        records[0].headers,
        [("traceparent".to_owned(), Some(b"00-1".to_vec()))]
    );
    let stats = producer.stats();
    assert_eq!((stats.records_acknowledged, stats.records_failed), (1, 0));
}

/// 100,000 keyed records from four tasks sharing one producer, on a topic of six partitions:
/// each record once, in its key's murmur2 partition, each task's records of a partition in
/// the order sent, each at the offset its delivery said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_records_land_in_their_partition_in_order_exactly_once() {
    const TASKS: usize = 4;
    const PER_TASK: usize = 25_000;
    let broker = live::broker();
    let topic = live::unique_name("producer-keyed");
    broker.create_topic(&topic, 6);
    let config = producer_config(&broker.bootstrap, &[("linger.ms", "5")]);
    let producer = std::sync::Arc::new(Producer::connect(config).await.expect("connect"));
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let producer = producer.clone();
        let topic = topic.clone();
        tasks.push(tokio::spawn(async move {
            let mut deliveries = Vec::with_capacity(PER_TASK);
            for i in 0..PER_TASK {
                let key = format!("key-{}", i % 1000);
                let value = format!("{task}:{i}");
                let record = ProducerRecord::new(topic.as_str()).key(&key).value(value);
                let delivery = producer.send(record).await.expect("send");
                deliveries.push((key, delivery));
            }
            let mut delivered = Vec::with_capacity(PER_TASK);
            for (i, (key, delivery)) in deliveries.into_iter().enumerate() {
                let at = delivery.await.expect("delivered");
                delivered.push((format!("{task}:{i}"), key, at.partition(), at.offset()));
            }
            delivered
        }));
    }
    let mut sent = Vec::new();
    for task in tasks {
        sent.extend(within("the sending tasks", task).await.expect("task"));
    }
    within("close", producer.close()).await.expect("close");

    let read = read_back(&broker.bootstrap, &topic).await;
    let mut by_offset: BTreeMap<(i32, i64), (Vec<u8>, Vec<u8>)> = BTreeMap::new();
    for (partition, records) in &read {
        for record in records {
            let (key, value) = (record.key.clone().unwrap(), record.value.clone().unwrap());
            assert_eq!(
                *partition,
                Partitioner::Murmur2.partition(&key, 6),
                "a key outside its murmur2 partition"
            );
            by_offset.insert((*partition, record.offset), (key, value));
        }
    }
    assert_eq!(by_offset.len(), TASKS * PER_TASK, "records read back");
    for (value, key, partition, offset) in &sent {
        let read = &by_offset[&(*partition, *offset)];
        assert_eq!(
            (&read.0[..], &read.1[..]),
            (key.as_bytes(), value.as_bytes())
        );
    }
    // Each task's records of one partition at growing offsets: the order sent.
    let mut last: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for (value, _, partition, offset) in &sent {
        let task = value.split(':').next().unwrap().to_owned();
        if let Some(before) = last.insert((task, *partition), *offset) {
            assert!(
                before < *offset,
                "out of send order in partition {partition}"
            );
        }
    }
    assert_eq!(
        producer.stats().records_acknowledged,
        (TASKS * PER_TASK) as u64
    );
}

/// Every codec: the records read back as sent, with the offsets the deliveries gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_codec_round_trips() {
    let broker = live::broker();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = live::unique_name(&format!("producer-codec-{codec}"));
        broker.create_topic(&topic, 1);
        let config = producer_config(&broker.bootstrap, &[("compression.type", codec)]);
        let producer = Producer::connect(config).await.expect("connect");
        let mut deliveries = Vec::new();
        for i in 0..500 {
            let value = format!("{codec} value {i} {}", "x".repeat(i % 50));
            let record = ProducerRecord::new(topic.as_str()).value(value);
            deliveries.push(producer.send(record).await.expect("send"));
        }
        producer.close().await.expect("close");
        let read = read_back(&broker.bootstrap, &topic).await;
        let records = &read[&0];
        assert_eq!(records.len(), 500, "{codec}");
        for (i, delivery) in deliveries.into_iter().enumerate() {
            let at = delivery.await.expect("delivered");
            let record = &records[i];
            assert_eq!(record.offset, at.offset(), "{codec}");
            let want = format!("{codec} value {i} {}", "x".repeat(i % 50));
            assert_eq!(record.value.as_deref(), Some(want.as_bytes()), "{codec}");
            assert_eq!(record.key, None);
        }
    }
}

/// `flush` sends what lingers at once (`linger.ms` here far longer than the test) and returns
/// once it is acknowledged; records without a key spread over partitions, each delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_sends_lingering_batches_and_waits_for_them() {
    let broker = live::broker();
    let topic = live::unique_name("producer-flush");
    broker.create_topic(&topic, 3);
    let config = producer_config(&broker.bootstrap, &[("linger.ms", "600000")]);
    let producer = Producer::connect(config).await.expect("connect");
    let mut deliveries = Vec::new();
    for i in 0..300 {
        let record = ProducerRecord::new(topic.as_str()).value(format!("{i}"));
        deliveries.push(producer.send(record).await.expect("send"));
    }
    within("flush", producer.flush()).await.expect("flush");
    assert_eq!(
        producer.stats().records_acknowledged,
        300,
        "all acknowledged by flush"
    );
    for delivery in deliveries {
        let delivered = within("delivery", delivery).await.expect("delivered");
        assert!(delivered.has_offset());
    }
    producer.close().await.expect("close");
    let read = read_back(&broker.bootstrap, &topic).await;
    assert_eq!(read.values().map(Vec::len).sum::<usize>(), 300);
}

/// With acks=0 the broker answers nothing: deliveries resolve without an offset, and the
/// records are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_zero_delivers_without_offsets() {
    let broker = live::broker();
    let topic = live::unique_name("producer-acks0");
    broker.create_topic(&topic, 1);
    let config = producer_config(&broker.bootstrap, &[("acks", "0")]);
    let producer = Producer::connect(config).await.expect("connect");
    let mut deliveries = Vec::new();
    for i in 0..100 {
        let record = ProducerRecord::new(topic.as_str())
            .key(b"k")
            .value(format!("{i}"));
        deliveries.push(producer.send(record).await.expect("send"));
    }
    producer.close().await.expect("close");
    for delivery in deliveries {
        let delivered = within("delivery", delivery).await.expect("delivered");
        assert_eq!((delivered.offset(), delivered.has_offset()), (-1, false));
    }
    let read = within("read back", async {
        loop {
            let read = read_back(&broker.bootstrap, &topic).await;
            if read.values().map(Vec::len).sum::<usize>() >= 100 {
                break read;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;
    let values: Vec<_> = read[&0].iter().map(|r| r.value.clone().unwrap()).collect();
    let sent: Vec<_> = (0..100).map(|i| format!("{i}").into_bytes()).collect();
    assert_eq!(values, sent);
}
