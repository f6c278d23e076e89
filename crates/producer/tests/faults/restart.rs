//! The broker restarted while records flow: the producer reconnects, resends what was in
//! flight with the same sequences, and the broker (which kept its producer state) takes each
//! batch once.

use std::time::Duration;

use super::check::{finish_all_delivered, start_sending, Pace};
use crate::support::{live, within};

const RECORDS: usize = 300_000;

/// 300,000 keyed records across a stop and a start of the broker: every delivery resolves,
/// each record once, in send order, at the offset its delivery gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_loses_duplicates_and_reorders_nothing() {
    let broker = live::broker();
    let topic = live::unique_name("pfaults-restart");
    broker.create_topic(&topic, 3);
    let pace = Pace {
        count: RECORDS,
        pause_every: 10_000,
        pause: Duration::from_millis(20),
    };
    let more = [("linger.ms", "5"), ("request.timeout.ms", "5000")];
    let (producer, sending) = start_sending(&broker.bootstrap, &more, &topic, pace).await;
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
    finish_all_delivered(&broker.bootstrap, &topic, &producer, sending).await;
    let stats = producer.stats();
    assert!(stats.retries > 0, "the restart went unnoticed: {stats:?}");
}
