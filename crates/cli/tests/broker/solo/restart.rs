//! A broker restarted in the middle of a consume: the consumer reconnects with backoff and
//! resumes at the next offset, with no gap and no duplicate.

use std::time::Duration;

use crate::support::broker::{
    assert_same_records, broker, simple_records, unique_topic, HeldConsume, ProducePlan,
};

#[test]
fn restarted_broker_loses_and_duplicates_nothing() {
    let broker = broker();
    let topic = unique_topic("restart");
    broker.create_topic(&topic, 2, 1);
    let plan = |from, count| ProducePlan {
        topic: topic.clone(),
        compression: "lz4".into(),
        steps: vec![(None, simple_records(from, count, 2))],
        ..ProducePlan::default()
    };
    let half = 20_000;
    let mut expected = broker.produce_python(&plan(0, half));

    let consume = HeldConsume::start(&broker.bootstrap, &topic, 2 * half, 1000);
    broker.kafka_sh("stop-node", &["--node", "1"]);
    std::thread::sleep(Duration::from_secs(1));
    broker.kafka_sh("start-node", &["--node", "1"]);
    expected.extend(broker.produce_python(&plan(half, half)));
    expected.sort_by_key(|r| (r.partition, r.offset));
    let (printed, stderr) = consume.finish();

    assert!(
        stderr.contains("reconnecting"),
        "the consumer should have seen the broker go away:\n{stderr}"
    );
    assert_same_records(&printed, &expected);
}
