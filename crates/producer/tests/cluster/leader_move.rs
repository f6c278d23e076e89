//! Leaders moved while idempotent records flow: the node leading a partition stops (its
//! partitions move to the other replicas), comes back, and a preferred-leader election moves
//! them back. Every record arrives once, in send order.

use std::time::Duration;

use crate::check::{finish_all_delivered, start_sending, Pace};
use crate::support::{live, within, LIMIT};

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
    let pace = Pace {
        count: RECORDS,
        pause_every: 10_000,
        pause: Duration::from_millis(30),
    };
    let more = [("linger.ms", "5"), ("request.timeout.ms", "5000")];
    let (producer, sending) = start_sending(&cluster.bootstrap, &more, &topic, pace).await;
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
    finish_all_delivered(&cluster.bootstrap, &topic, &producer, sending).await;
    let stats = producer.stats();
    assert!(
        stats.retries > 0,
        "no leader moved under the producer: {stats:?}"
    );
}
