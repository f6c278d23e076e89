//! `krec metadata` on the three-node cluster, checked against Kafka's TopicCommand --describe:
//! three replicas each, so replicas, ISR and leaders differ between partitions.

use crate::support::questions::check_metadata;

#[test]
fn metadata_agrees_with_topic_command_on_three_nodes() {
    check_metadata(&crate::support::broker::cluster(), 3);
}
