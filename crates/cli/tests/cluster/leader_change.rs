//! A leader change on a three-node cluster in the middle of a consume: the consumer follows
//! the new leaders and delivers every record exactly once, in order per partition.

use crate::support::broker::{
    assert_same_records, cluster, simple_records, unique_topic, HeldConsume, ProducePlan,
};

#[test]
fn leader_change_loses_and_duplicates_nothing() {
    let cluster = cluster();
    let topic = unique_topic("leaders");
    cluster.create_topic(&topic, 3, 3);
    let plan = |from, count| ProducePlan {
        topic: topic.clone(),
        compression: "zstd".into(),
        steps: vec![(None, simple_records(from, count, 3))],
        ..ProducePlan::default()
    };
    let half = 15_000;
    let mut expected = cluster.produce_python(&plan(0, half));

    let consume = HeldConsume::start(&cluster.bootstrap, &topic, 2 * half, 1000);
    // Leaders are spread over the three nodes, so node 1 leads some partition.
    cluster.kafka_sh("stop-node", &["--node", "1"]);
    expected.extend(cluster.produce_python(&plan(half, half)));
    expected.sort_by_key(|r| (r.partition, r.offset));
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| consume.finish()));
    // Bring the node back whatever happened, so the cluster stays whole for other tests.
    cluster.kafka_sh("start-node", &["--node", "1"]);
    let (printed, stderr) = finished.unwrap_or_else(|panic| std::panic::resume_unwind(panic));

    assert!(
        stderr.contains("partition leader changed"),
        "the consumer should have followed a new leader:\n{stderr}"
    );
    assert_same_records(&printed, &expected);
}
