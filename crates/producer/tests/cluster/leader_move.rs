//! Leaders moved while idempotent records flow: the node leading a partition stops (its
//! partitions move to the other replicas), comes back, and a preferred-leader election moves
//! them back. Every record arrives once, in send order.

use std::sync::Arc;
use std::time::Duration;

use krec_producer::Producer;

use crate::check::{assert_exactly_once, outcomes, properties, send_keyed};
use crate::support::{live, producer_config, within, LIMIT};

const RECORDS: usize = 300_000;

/// 300,000 keyed records on a topic of three partitions, three replicas each, while node 1
/// stops (what was sent by then is delivered through the new leaders before it is back),
/// starts and gets its leaderships back: every delivery resolves, each record once at the
/// offset its delivery gave, each partition in send order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaders_moving_lose_duplicate_and_reorder_nothing() {
    let cluster = live::cluster();
    let topic = live::unique_name("pfaults-leaders");
    cluster.kafka_sh(
        "topic",
        &[
            "create",
            &topic,
            "--partitions",
            "3",
            "--replication-factor",
            "3",
        ],
    );
    let config = producer_config(
        &cluster.bootstrap,
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
        Duration::from_millis(30),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Leaders are spread over the three nodes, so node 1 leads some partition.
    let node = |command: &'static str| {
        let cluster = cluster.clone();
        tokio::task::spawn_blocking(move || cluster.kafka_sh(command, &["--node", "1"]))
    };
    within("stop-node", node("stop-node")).await.expect("stop");
    // What was sent so far is delivered by the new leaders, while node 1 is away.
    let flushed = tokio::time::timeout(LIMIT, producer.flush()).await;
    within("start-node", node("start-node"))
        .await
        .expect("start");
    assert!(
        matches!(flushed, Ok(Ok(()))),
        "the records of node 1's partitions waited for node 1: {flushed:?}"
    );
    let election = {
        let cluster = cluster.clone();
        tokio::task::spawn_blocking(move || {
            cluster.tool(
                "org.apache.kafka.tools.LeaderElectionCommand",
                &[
                    "--bootstrap-server",
                    "{bootstrap}",
                    "--election-type",
                    "PREFERRED",
                    "--all-topic-partitions",
                ],
            )
        })
    };
    within("the preferred-leader election", election)
        .await
        .expect("election");
    let outcomes = outcomes(sending).await;
    within("close", producer.close()).await.expect("close");
    let stats = producer.stats();
    assert!(
        stats.retries > 0,
        "no leader moved under the producer: {stats:?}"
    );

    let failed = assert_exactly_once(&cluster.bootstrap, &topic, &outcomes).await;
    assert_eq!(
        failed,
        0,
        "records failed: {:?}",
        outcomes.iter().find(|o| o.is_err())
    );
}
