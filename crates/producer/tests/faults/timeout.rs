//! A black hole (requests reach the broker, no answer comes back) with `delivery.timeout.ms`
//! twice `request.timeout.ms`: as in the Java producer, a request is given up after
//! `request.timeout.ms`, the broker's own wait included, so a retry goes out before the
//! record's delivery times out.

use std::time::{Duration, Instant};

use krec_producer::{Error, Producer, ProducerRecord};

use super::check::properties;
use crate::support::{live, producer_config, within, Lane};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_request_is_retried_within_the_delivery_timeout() {
    let broker = live::broker();
    let lane = Lane::take(1);
    let topic = live::unique_name("pfaults-timeout");
    broker.create_topic(&topic, 1);
    let config = producer_config(
        &lane.bootstrap,
        &properties(&[
            ("request.timeout.ms", "1000"),
            ("delivery.timeout.ms", "2000"),
        ]),
    );
    let producer = within("connect", Producer::connect(config))
        .await
        .expect("connect");
    let first = ProducerRecord::new(topic.as_str()).key("k").value("before");
    let delivery = producer.send(first).await.expect("send");
    within("the first delivery", delivery)
        .await
        .expect("delivered before the black hole");

    lane.add_toxic("hole", "timeout", "downstream", r#"{"timeout":0}"#);
    let started = Instant::now();
    let record = ProducerRecord::new(topic.as_str()).key("k").value("lost");
    let delivery = producer.send(record).await.expect("send");
    let outcome = within("the delivery in the black hole", delivery).await;
    let waited = started.elapsed();
    lane.remove_toxic("hole");
    match outcome {
        // Each request given up after request.timeout.ms: the batch went out at least twice.
        Err(Error::DeliveryTimeout { retries, .. }) => assert!(
            retries >= 2,
            "sent again {retries} times before delivery.timeout.ms"
        ),
        other => panic!("expected a delivery timeout, got {other:?}"),
    }
    // Loose bounds: not before delivery.timeout.ms, and not many request timeouts after it.
    assert!(
        waited >= Duration::from_millis(2000),
        "failed after {waited:?}"
    );
    assert!(waited < Duration::from_secs(10), "failed after {waited:?}");
    drop(producer);
}
