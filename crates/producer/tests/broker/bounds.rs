//! The producer's bounds: an unknown topic, records too large, and `buffer.memory` when the
//! broker takes nothing.

use std::time::{Duration, Instant};

use krec_producer::{Error, Producer, ProducerRecord};

use crate::support::{live, producer_config, within, Lane};

/// A topic the cluster does not have (auto-creation is off on the suite's broker): `send`
/// fails within `max.block.ms` (and not long after) with an error naming the topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_topic_fails_within_max_block_naming_it() {
    let broker = live::broker();
    let topic = live::unique_name("producer-missing");
    let config = producer_config(&broker.bootstrap, &[("max.block.ms", "1500")]);
    let producer = Producer::connect(config).await.expect("connect");
    let started = Instant::now();
    let record = ProducerRecord::new(topic.as_str()).value(b"v");
    let error = within("send", producer.send(record)).await.unwrap_err();
    assert!(matches!(error, Error::UnknownTopic { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains(&topic) && text.contains("max.block.ms"),
        "{text}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "gave up early"
    );
    producer.close().await.expect("close");
}

/// A record over `max.request.size` fails at once, again and again, and gives back the
/// `buffer.memory` it took (else the fourth would find no room); one over `buffer.memory`
/// too; the producer then still delivers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_too_large_fail_at_once_and_hold_no_memory() {
    let broker = live::broker();
    let topic = live::unique_name("producer-large");
    broker.create_topic(&topic, 1);
    let properties = [
        ("max.request.size", "30000"),
        ("buffer.memory", "100000"),
        ("max.block.ms", "2000"),
    ];
    let producer = Producer::connect(producer_config(&broker.bootstrap, &properties))
        .await
        .expect("connect");
    let large = vec![7u8; 40_000];
    for _ in 0..5 {
        let record = ProducerRecord::new(topic.as_str()).value(&large);
        let error = within("send", producer.send(record)).await.unwrap_err();
        assert!(
            matches!(
                error,
                Error::RecordTooLarge {
                    key: "max.request.size",
                    ..
                }
            ),
            "{error:?}"
        );
    }
    let huge = vec![7u8; 200_000];
    let record = ProducerRecord::new(topic.as_str()).value(&huge);
    let error = within("send", producer.send(record)).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::RecordTooLarge {
                key: "buffer.memory",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains(&topic), "{error}");
    let record = ProducerRecord::new(topic.as_str()).value(&large[..20_000]);
    let delivery = within("send", producer.send(record)).await.expect("send");
    assert_eq!(
        within("delivery", delivery)
            .await
            .expect("delivered")
            .offset(),
        0
    );
    producer.close().await.expect("close");
}

/// With the broker unreachable behind a Toxiproxy lane, `send` takes records until
/// `buffer.memory` is full, then fails after `max.block.ms`; once the lane is open again
/// every record taken is delivered and the memory is free for as many more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffer_memory_bounds_what_send_takes_while_the_broker_is_away() {
    const MEMORY: usize = 256 << 10;
    const VALUE: usize = 1024;
    let broker = live::broker();
    let lane = Lane::take(1);
    let topic = live::unique_name("producer-memory");
    broker.create_topic(&topic, 2);
    let properties = [
        ("buffer.memory", "262144"),
        ("max.block.ms", "1000"),
        ("request.timeout.ms", "2000"),
        ("delivery.timeout.ms", "30000"),
    ];
    let producer = Producer::connect(producer_config(&lane.bootstrap, &properties))
        .await
        .expect("connect");
    let value = vec![1u8; VALUE];
    let first = producer
        .send(ProducerRecord::new(topic.as_str()).value(&value))
        .await
        .expect("send");
    within("first delivery", first).await.expect("delivered");

    lane.add_toxic("away", "timeout", "upstream", r#"{"timeout":0}"#);
    let mut deliveries = Vec::new();
    let error = loop {
        let record = ProducerRecord::new(topic.as_str()).value(&value);
        match within("send", producer.send(record)).await {
            Ok(delivery) => deliveries.push(delivery),
            Err(error) => break error,
        }
        assert!(deliveries.len() * VALUE <= MEMORY, "past buffer.memory");
    };
    assert!(matches!(error, Error::BufferFull { .. }), "{error:?}");
    assert!(error.to_string().contains("buffer.memory"), "{error}");
    assert!(
        deliveries.len() * VALUE > MEMORY / 2,
        "{} taken",
        deliveries.len()
    );
    lane.remove_toxic("away");
    for delivery in deliveries.drain(..) {
        within("delivery", delivery).await.expect("delivered");
    }
    for _ in 0..MEMORY / VALUE {
        let record = ProducerRecord::new(topic.as_str()).value(&value);
        deliveries.push(
            within("send", producer.send(record))
                .await
                .expect("room again"),
        );
    }
    producer.close().await.expect("close");
    for delivery in deliveries {
        within("delivery", delivery).await.expect("delivered");
    }
}

/// Dropping the producer while the broker is away resolves every pending delivery with the
/// reason, and gives no record as delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_producer_resolves_every_delivery() {
    let broker = live::broker();
    let lane = Lane::take(3);
    let topic = live::unique_name("producer-drop");
    broker.create_topic(&topic, 1);
    let producer = Producer::connect(producer_config(&lane.bootstrap, &[]))
        .await
        .expect("connect");
    let first = producer
        .send(ProducerRecord::new(topic.as_str()).value(b"first"))
        .await
        .expect("send");
    within("first delivery", first).await.expect("delivered");
    lane.add_toxic("away", "timeout", "upstream", r#"{"timeout":0}"#);
    let mut deliveries = Vec::new();
    for _ in 0..50 {
        let record = ProducerRecord::new(topic.as_str()).value(b"held");
        deliveries.push(producer.send(record).await.expect("send"));
    }
    drop(producer);
    for delivery in deliveries {
        let error = within("delivery", delivery).await.unwrap_err();
        assert!(matches!(error, Error::Stopped { .. }), "{error:?}");
        assert!(error.to_string().contains("dropped"), "{error}");
    }
}
