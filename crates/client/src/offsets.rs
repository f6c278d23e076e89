//! ListOffsets: the earliest offset, the latest (or last stable) offset, or the first offset at
//! or after a timestamp.

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::Connection;
use crate::Error;

/// Which offset to ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetQuery {
    /// The log start offset.
    Earliest,
    /// The high watermark (or the last stable offset when reading committed data).
    Latest,
    /// The first offset whose timestamp is at or after this many milliseconds since the epoch.
    Timestamp(i64),
}

impl OffsetQuery {
    fn wire_timestamp(self) -> i64 {
        match self {
            Self::Earliest => -2,
            Self::Latest => -1,
            Self::Timestamp(ms) => ms,
        }
    }
}

/// One partition's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedOffset {
    /// Partition id.
    pub partition: i32,
    /// Kafka error code (0 when fine).
    pub error_code: i16,
    /// The offset found; -1 for a timestamp after the last record.
    pub offset: i64,
}

/// Asks the leader of the partitions for offsets. `partitions` holds
/// `(partition, current_leader_epoch, query)`.
pub async fn list_offsets(
    connection: &mut Connection,
    topic: &str,
    partitions: &[(i32, i32, OffsetQuery)],
    read_committed: bool,
) -> Result<Vec<ListedOffset>, Error> {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(i8::from(read_committed))
        .with_timeout_ms(30_000)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partitions(
                partitions
                    .iter()
                    .map(|&(partition, epoch, query)| {
                        ListOffsetsPartition::default()
                            .with_partition_index(partition)
                            .with_current_leader_epoch(epoch)
                            .with_timestamp(query.wire_timestamp())
                    })
                    .collect(),
            )]);
    let (_, response) = connection.request(&request).await?;
    let mut listed = Vec::with_capacity(partitions.len());
    for topic_response in response.topics {
        for p in topic_response.partitions {
            listed.push(ListedOffset {
                partition: p.partition_index,
                error_code: p.error_code,
                offset: p.offset,
            });
        }
    }
    Ok(listed)
}
