//! The broker restarted while records flow: the producer reconnects, resends what was in
//! flight with the same sequences, and the broker (which kept its producer state) takes each
//! batch once.

use std::sync::Arc;
use std::time::Duration;

use krec_producer::Producer;

use super::check::{assert_exactly_once, outcomes, properties, send_keyed};
use crate::support::{live, producer_config, within};

const RECORDS: usize = 300_000;

/// 300,000 keyed records across a stop and a start of the broker: every delivery resolves,
/// each record once, in send order, at the offset its delivery gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_loses_duplicates_and_reorders_nothing() {
    let broker = live::broker();
    let topic = live::unique_name("pfaults-restart");
    broker.create_topic(&topic, 3);
    let config = producer_config(
        &broker.bootstrap,
        &properties(&[("linger.ms", "5"), ("request.timeout.ms", "5000")]),
    );
    let producer = Arc::new(
        within("connect", Producer::connect(config))
            .await
            .expect("connect"),
    );
    let sending = send_keyed(
        producer.clone(),
        topic.clone(),
        RECORDS,
        10_000,
        Duration::from_millis(20),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let restart = {
        let broker = broker.clone();
        tokio::task::spawn_blocking(move || {
            broker.kafka_sh("stop-node", &["--node", "1"]);
            std::thread::sleep(Duration::from_secs(1));
            broker.kafka_sh("start-node", &["--node", "1"]);
        })
    };
    within("the restart", restart).await.expect("restart");
    let outcomes = outcomes(sending).await;
    within("close", producer.close()).await.expect("close");
    let stats = producer.stats();
    assert!(stats.retries > 0, "the restart went unnoticed: {stats:?}");

    let failed = assert_exactly_once(&broker.bootstrap, &topic, &outcomes).await;
    assert_eq!(
        failed,
        0,
        "records failed: {:?}",
        outcomes.iter().find(|o| o.is_err())
    );
}
