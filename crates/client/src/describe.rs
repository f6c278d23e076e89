//! The cluster as an operator asks about it (kcat's `-L`): brokers with their racks, the
//! controller, the cluster id, and per topic its partitions with replicas, ISR and offline
//! replicas. Errors are kept per topic, not turned into a failure of the whole answer.

use kafka_protocol::messages::MetadataResponse;
use uuid::Uuid;

use super::error_name;
use super::metadata::{MetadataClient, TopicSelection};
use crate::Error;

/// What the cluster said about itself and the topics asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterDescription {
    /// Cluster id (none from brokers too old to send it).
    pub cluster_id: Option<String>,
    /// Node id of the controller the broker named (-1 when it named none).
    pub controller: i32,
    /// Brokers, by node id.
    pub brokers: Vec<BrokerDescription>,
    /// Topics, by name.
    pub topics: Vec<TopicDescription>,
}

/// One broker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerDescription {
    /// Node id.
    pub id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: i32,
    /// `broker.rack`, when set.
    pub rack: Option<String>,
}

/// One topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicDescription {
    /// Topic name.
    pub name: String,
    /// Topic id (nil from brokers too old to send it).
    pub id: Uuid,
    /// Kafka's name of the topic's error (`UNKNOWN_TOPIC_OR_PARTITION`), none when fine.
    pub error: Option<String>,
    /// Kafka's internal topics (`__consumer_offsets`, ...).
    pub internal: bool,
    /// Partitions, by id.
    pub partitions: Vec<PartitionDescription>,
}

/// One partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionDescription {
    /// Partition id.
    pub partition: i32,
    /// Node id of the leader (-1 while there is none).
    pub leader: i32,
    /// Leader epoch (-1 when not sent).
    pub leader_epoch: i32,
    /// Replica node ids, in the order the controller keeps them.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids.
    pub isr: Vec<i32>,
    /// Replicas whose log directory is offline.
    pub offline: Vec<i32>,
    /// Kafka's name of the partition's error (`LEADER_NOT_AVAILABLE`), none when fine.
    pub error: Option<String>,
}

/// Describes the cluster and `topics` (`None`: every topic the principal may see).
pub async fn describe_cluster(
    client: &mut MetadataClient,
    topics: Option<&[String]>,
) -> Result<ClusterDescription, Error> {
    let selection = topics.map_or(TopicSelection::All, TopicSelection::Named);
    Ok(from_response(client.response(selection).await?))
}

fn error_text(code: i16) -> Option<String> {
    (code != 0).then(|| error_name(code))
}

fn node_ids(nodes: &[kafka_protocol::messages::BrokerId]) -> Vec<i32> {
    nodes.iter().map(|node| node.0).collect()
}

fn from_response(response: MetadataResponse) -> ClusterDescription {
    let mut brokers: Vec<BrokerDescription> = response
        .brokers
        .iter()
        .map(|b| BrokerDescription {
            id: b.node_id.0,
            host: b.host.as_str().to_owned(),
            port: b.port,
            rack: b.rack.as_ref().map(|rack| rack.as_str().to_owned()),
        })
        .collect();
    brokers.sort_by_key(|b| b.id);
    let mut topics: Vec<TopicDescription> = response
        .topics
        .iter()
        .map(|topic| {
            let mut partitions: Vec<PartitionDescription> = topic
                .partitions
                .iter()
                .map(|p| PartitionDescription {
                    partition: p.partition_index,
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    replicas: node_ids(&p.replica_nodes),
                    isr: node_ids(&p.isr_nodes),
                    offline: node_ids(&p.offline_replicas),
                    error: error_text(p.error_code),
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            TopicDescription {
                name: topic
                    .name
                    .as_ref()
                    .map_or_else(String::new, |name| name.0.as_str().to_owned()),
                id: topic.topic_id,
                error: error_text(topic.error_code),
                internal: topic.is_internal,
                partitions,
            }
        })
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    ClusterDescription {
        cluster_id: response.cluster_id.map(|id| id.as_str().to_owned()),
        controller: response.controller_id.0,
        brokers,
        topics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::{BrokerId, TopicName};
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn keeps_replicas_racks_and_per_topic_errors() {
        let response = MetadataResponse::default()
            .with_cluster_id(Some(StrBytes::from_static_str("c1")))
            .with_controller_id(BrokerId(2))
            .with_brokers(vec![
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(2))
                    .with_host(StrBytes::from_static_str("b"))
                    .with_port(9093),
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(1))
                    .with_host(StrBytes::from_static_str("a"))
                    .with_port(9092)
                    .with_rack(Some(StrBytes::from_static_str("r1"))),
            ])
            .with_topics(vec![
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("t"))))
                    .with_topic_id(Uuid::from_u128(9))
                    .with_partitions(vec![MetadataResponsePartition::default()
                        .with_partition_index(0)
                        .with_leader_id(BrokerId(1))
                        .with_leader_epoch(3)
                        .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
                        .with_isr_nodes(vec![BrokerId(1)])
                        .with_offline_replicas(vec![BrokerId(2)])]),
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("gone"))))
                    .with_error_code(3),
            ]);
        let cluster = from_response(response);
        assert_eq!(cluster.cluster_id.as_deref(), Some("c1"));
        assert_eq!(cluster.controller, 2);
        assert_eq!(cluster.brokers[0].id, 1, "brokers sorted by id");
        assert_eq!(cluster.brokers[0].rack.as_deref(), Some("r1"));
        assert_eq!(cluster.brokers[1].rack, None);
        assert_eq!(cluster.topics[0].name, "gone", "topics sorted by name");
        assert_eq!(
            cluster.topics[0].error.as_deref(),
            Some("UNKNOWN_TOPIC_OR_PARTITION")
        );
        let t = &cluster.topics[1];
        assert_eq!(t.id, Uuid::from_u128(9));
        assert_eq!(t.error, None);
        let p = &t.partitions[0];
        assert_eq!((p.leader, p.leader_epoch), (1, 3));
        assert_eq!(
            (p.replicas.clone(), p.isr.clone(), p.offline.clone()),
            (vec![1, 2], vec![1], vec![2])
        );
    }
}
