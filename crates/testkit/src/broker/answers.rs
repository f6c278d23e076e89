//! Answers every fake broker script gives alike: the versions it speaks, itself as the only
//! broker and leader, and offsets from the test's log.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, ListOffsetsRequest, ListOffsetsResponse,
    MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

/// The node id the fake broker gives itself.
pub const NODE_ID: i32 = 1;

/// An ApiVersions answer announcing `(api, min, max)` for each API the script speaks.
pub fn api_versions(ranges: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
    let keys = ranges
        .iter()
        .map(|&(api, min, max)| {
            ApiVersion::default()
                .with_api_key(api as i16)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect();
    ApiVersionsResponse::default().with_api_keys(keys)
}

/// A Metadata answer: the fake broker (127.0.0.1:`port`) is the only broker and leads every
/// partition of `topics`, each given as `(name, partition count)`.
pub fn metadata(port: u16, topics: &[(&str, i32)]) -> MetadataResponse {
    let broker = MetadataResponseBroker::default()
        .with_node_id(BrokerId(NODE_ID))
        .with_host(StrBytes::from_static_str("127.0.0.1"))
        .with_port(i32::from(port));
    let topics = topics
        .iter()
        .map(|&(name, partitions)| {
            let partitions = (0..partitions)
                .map(|p| {
                    MetadataResponsePartition::default()
                        .with_partition_index(p)
                        .with_leader_id(BrokerId(NODE_ID))
                        .with_leader_epoch(0)
                })
                .collect();
            MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(name.to_owned()))))
                .with_partitions(partitions)
        })
        .collect();
    MetadataResponse::default()
        .with_brokers(vec![broker])
        .with_topics(topics)
}

/// A ListOffsets answer to `request`: each partition's offset is `offset(partition,
/// timestamp)`, the timestamp being -2 for the earliest offset and -1 for the latest.
pub fn list_offsets(
    request: &ListOffsetsRequest,
    offset: impl Fn(i32, i64) -> i64,
) -> ListOffsetsResponse {
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_offset(offset(p.partition_index, p.timestamp))
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}
