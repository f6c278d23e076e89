//! Metadata: brokers, topics (with their ids), partition leaders and leader epochs.

use std::collections::HashMap;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::{codes, error_name, Connection, ConnectionSettings};
use crate::Error;

/// What the cluster said about its brokers and the topics asked for.
#[derive(Clone, Debug, Default)]
pub struct ClusterMetadata {
    /// `host:port` of each broker, by node id.
    pub brokers: HashMap<i32, String>,
    /// The topics asked for, by name.
    pub topics: HashMap<String, TopicMetadata>,
}

/// One topic's metadata.
#[derive(Clone, Debug)]
pub struct TopicMetadata {
    /// Topic name.
    pub name: String,
    /// Topic id (nil when the broker is too old to send it).
    pub topic_id: Uuid,
    /// Kafka error code for the topic (0 when fine).
    pub error_code: i16,
    /// The broker flags it as internal (`__consumer_offsets`, `__transaction_state`, ...).
    pub is_internal: bool,
    /// Partitions, sorted by partition id.
    pub partitions: Vec<PartitionMetadata>,
}

/// One partition's leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// Partition id.
    pub partition: i32,
    /// Node id of the leader (-1 while there is none).
    pub leader: i32,
    /// Leader epoch (-1 when the broker does not send it).
    pub leader_epoch: i32,
    /// Kafka error code for the partition (0 when fine).
    pub error_code: i16,
}

impl ClusterMetadata {
    /// The topic, or [`Error::UnknownTopic`] when the cluster does not have it.
    pub fn topic(&self, name: &str) -> Result<&TopicMetadata, Error> {
        match self.topics.get(name) {
            Some(topic) if topic.error_code == codes::UNKNOWN_TOPIC_OR_PARTITION => {
                Err(Error::UnknownTopic {
                    topic: name.to_owned(),
                })
            }
            // Kafka answers a topic the principal may not describe as if it were empty.
            Some(topic) if crate::error::is_authorization_code(topic.error_code) => {
                Err(Error::Broker {
                    broker: "cluster".to_owned(),
                    api: "Metadata",
                    topic: Some(name.to_owned()),
                    partition: None,
                    code: topic.error_code,
                    name: crate::error_name(topic.error_code),
                })
            }
            Some(topic) => Ok(topic),
            None => Err(Error::UnknownTopic {
                topic: name.to_owned(),
            }),
        }
    }

    /// The leader of a partition, if it has one.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<PartitionMetadata> {
        let topic = self.topics.get(topic)?;
        topic
            .partitions
            .iter()
            .find(|p| p.partition == partition)
            .copied()
    }
}

/// Which topics a Metadata request asks about.
#[derive(Clone, Copy, Debug)]
pub enum TopicSelection<'a> {
    /// These topics (none: brokers only).
    Named(&'a [String]),
    /// These topics, asking the brokers to create those missing where they allow it
    /// (`auto.create.topics.enable`), as the Java producer does.
    Creating(&'a [String]),
    /// Every topic of the cluster (the principal may describe).
    All,
}

/// Asks a broker for the metadata of `topics`.
pub async fn fetch_metadata(
    connection: &mut Connection,
    topics: &[String],
) -> Result<ClusterMetadata, Error> {
    fetch_selected(connection, TopicSelection::Named(topics)).await
}

/// Asks a broker for the metadata of the selected topics.
pub async fn fetch_selected(
    connection: &mut Connection,
    selection: TopicSelection<'_>,
) -> Result<ClusterMetadata, Error> {
    Ok(from_response(
        metadata_response(connection, selection).await?,
    ))
}

/// The broker's whole Metadata answer for the selected topics.
async fn metadata_response(
    connection: &mut Connection,
    selection: TopicSelection<'_>,
) -> Result<MetadataResponse, Error> {
    let topics = match selection {
        TopicSelection::Named(topics) | TopicSelection::Creating(topics) => Some(
            topics
                .iter()
                .map(|name| {
                    MetadataRequestTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
                })
                .collect(),
        ),
        // A null list asks for every topic.
        TopicSelection::All => None,
    };
    let request = MetadataRequest::default()
        .with_topics(topics)
        .with_allow_auto_topic_creation(matches!(selection, TopicSelection::Creating(_)));
    let (_, response) = connection.request(&request).await?;
    Ok(response)
}

/// Keeps one connection for metadata requests, falling back over every known broker and then
/// the bootstrap list when it breaks.
#[derive(Debug)]
pub struct MetadataClient {
    connection: Option<Connection>,
    bootstrap: Vec<String>,
    known: Vec<String>,
    settings: ConnectionSettings,
}

impl MetadataClient {
    /// A client that will connect to `bootstrap` on first use.
    pub fn new(bootstrap: Vec<String>, settings: ConnectionSettings) -> Self {
        Self {
            connection: None,
            bootstrap,
            known: Vec::new(),
            settings,
        }
    }

    /// Metadata for `topics` from whichever broker answers first.
    pub async fn fetch(&mut self, topics: &[String]) -> Result<ClusterMetadata, Error> {
        self.fetch_selected(TopicSelection::Named(topics)).await
    }

    /// Metadata for every topic of the cluster, from whichever broker answers first.
    pub async fn fetch_all(&mut self) -> Result<ClusterMetadata, Error> {
        self.fetch_selected(TopicSelection::All).await
    }

    /// Metadata for the selected topics from whichever broker answers first.
    pub async fn fetch_selected(
        &mut self,
        selection: TopicSelection<'_>,
    ) -> Result<ClusterMetadata, Error> {
        let response = self.response(selection).await?;
        Ok(self.remember(from_response(response)))
    }

    /// The whole Metadata answer for the selected topics from whichever broker answers
    /// first.
    pub(crate) async fn response(
        &mut self,
        selection: TopicSelection<'_>,
    ) -> Result<MetadataResponse, Error> {
        let mut last = None;
        if let Some(connection) = self.connection.as_mut() {
            match metadata_response(connection, selection).await {
                Ok(response) => return Ok(response),
                Err(error) => {
                    tracing::debug!(%error, "metadata connection failed; trying other brokers");
                    self.connection = None;
                    last = Some(error);
                }
            }
        }
        let mut candidates = self.known.clone();
        for address in &self.bootstrap {
            if !candidates.contains(address) {
                candidates.push(address.clone());
            }
        }
        for address in candidates {
            let attempt = async {
                let mut connection = Connection::connect(&address, &self.settings).await?;
                let response = metadata_response(&mut connection, selection).await?;
                Ok::<_, Error>((connection, response))
            };
            match attempt.await {
                Ok((connection, response)) => {
                    self.connection = Some(connection);
                    return Ok(response);
                }
                // Other brokers share the credentials and certificates: do not try them all.
                Err(error) if error.is_security_failure() => return Err(error),
                Err(error) => {
                    tracing::debug!(broker = %address, %error, "metadata attempt failed");
                    last = Some(error);
                }
            }
        }
        Err(Error::NoBroker {
            brokers: self.bootstrap.join(","),
            last: Box::new(last.unwrap_or(Error::InvalidArgument {
                what: "brokers",
                detail: "the bootstrap list is empty".to_owned(),
            })),
        })
    }

    fn remember(&mut self, metadata: ClusterMetadata) -> ClusterMetadata {
        let mut known: Vec<String> = metadata.brokers.values().cloned().collect();
        known.sort();
        self.known = known;
        metadata
    }
}

fn from_response(response: MetadataResponse) -> ClusterMetadata {
    let brokers = response
        .brokers
        .iter()
        .map(|b| (b.node_id.0, format!("{}:{}", b.host.as_str(), b.port)))
        .collect();
    let topics = response
        .topics
        .into_iter()
        .filter_map(|topic| {
            let name = topic.name?.0.as_str().to_owned();
            let mut partitions: Vec<PartitionMetadata> = topic
                .partitions
                .iter()
                .map(|p| PartitionMetadata {
                    partition: p.partition_index,
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    error_code: p.error_code,
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            if topic.error_code != 0 {
                tracing::debug!(topic = %name, error = %error_name(topic.error_code), "metadata error");
            }
            Some((
                name.clone(),
                TopicMetadata {
                    name,
                    topic_id: topic.topic_id,
                    error_code: topic.error_code,
                    is_internal: topic.is_internal,
                    partitions,
                },
            ))
        })
        .collect();
    ClusterMetadata { brokers, topics }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::BrokerId;

    #[test]
    fn reads_leaders_and_reports_unknown_topics() {
        let response = MetadataResponse::default()
            .with_brokers(vec![MetadataResponseBroker::default()
                .with_node_id(BrokerId(7))
                .with_host(StrBytes::from_static_str("h"))
                .with_port(9)])
            .with_topics(vec![
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("a"))))
                    .with_is_internal(true)
                    .with_partitions(vec![
                        MetadataResponsePartition::default()
                            .with_partition_index(1)
                            .with_leader_id(BrokerId(7))
                            .with_leader_epoch(4),
                        MetadataResponsePartition::default()
                            .with_partition_index(0)
                            .with_leader_id(BrokerId(-1))
                            .with_error_code(codes::LEADER_NOT_AVAILABLE),
                    ]),
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("gone"))))
                    .with_error_code(codes::UNKNOWN_TOPIC_OR_PARTITION),
            ]);
        let metadata = from_response(response);
        assert_eq!(metadata.brokers[&7], "h:9");
        let a = metadata.topic("a").unwrap();
        assert!(a.is_internal);
        assert_eq!(a.partitions[0].partition, 0);
        assert_eq!(a.partitions[0].leader, -1);
        assert_eq!(
            metadata.partition("a", 1),
            Some(PartitionMetadata {
                partition: 1,
                leader: 7,
                leader_epoch: 4,
                error_code: 0
            })
        );
        assert!(
            matches!(metadata.topic("gone"), Err(Error::UnknownTopic { topic }) if topic == "gone")
        );
        assert!(matches!(
            metadata.topic("never"),
            Err(Error::UnknownTopic { .. })
        ));
    }
}
