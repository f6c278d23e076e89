//! `Consumer::subscribe` with a pattern: a topic created after the consumer started is
//! picked up, a topic the pattern does not match is not.

use std::time::Duration;

use krec_consumer::{Consumer, Fetched, StartOffset, TopicSubscription};

use crate::support::{config, expected, live, numbered, records_of, within, Seen};

/// The pattern matches nothing when the consumer starts; a matching topic created later is
/// announced (`SubscriptionChanged`) and read from the beginning, every record of it; a
/// topic created at the same time that does not match is never read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pattern_picks_up_a_topic_created_later() {
    let broker = live::broker();
    let prefix = live::unique_name("kc-late");
    let topic = format!("{prefix}-a");
    let other = format!("x{prefix}-b");

    let mut settings = config(&broker);
    settings.metadata_refresh = Duration::from_millis(300);
    let mut consumer = Consumer::connect(settings).await.expect("connect");
    let pattern = TopicSubscription::parse([format!("^{prefix}-.*")]).expect("a pattern");
    consumer
        .subscribe(pattern, StartOffset::Beginning)
        .await
        .expect("subscribe");

    broker.create_topic(&other, 1);
    broker.produce(&other, &numbered(3, 1));
    broker.create_topic(&topic, 2);
    let acked = broker.produce(&topic, &numbered(6, 2));

    let mut announced = false;
    let mut seen: Vec<Seen> = Vec::new();
    within("the late topic's records", async {
        while !(announced && seen.len() >= acked.len()) {
            match consumer.poll().await.expect("poll") {
                Fetched::Chunk(chunk) => seen.extend(records_of(&chunk, &topic)),
                Fetched::SubscriptionChanged { added, dropped } => {
                    assert!(dropped.is_empty(), "dropped {dropped:?}");
                    assert!(
                        added.iter().all(|t| **t == *topic),
                        "added {added:?}, not only {topic}"
                    );
                    announced = true;
                }
                _ => {}
            }
        }
    })
    .await;
    seen.sort();
    assert_eq!(seen, expected(&acked));
}
