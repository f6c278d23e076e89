//! How far behind a group is, per partition: the committed offset (OffsetFetch) of a classic
//! or consumer group, or the start offset (DescribeShareGroupOffsets) of a share group, against
//! the partition's end (ListOffsets at each leader). Errors stay with their partition.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{DescribeShareGroupOffsetsRequest, GroupId, OffsetFetchRequest};
use kafka_protocol::protocol::StrBytes;

use super::groups::group_error;
use super::metadata::MetadataClient;
use super::offsets::{list_offsets, OffsetQuery};
use super::{codes, error_name, Connection, ConnectionSettings};
use crate::{Error, TopicPartition};

/// A partition's group offset, or the error code the coordinator gave for it.
pub(crate) type GroupOffsets = BTreeMap<TopicPartition, Result<i64, i16>>;

/// `(partition, current leader epoch, query)`, as [`list_offsets`] takes them.
type ListOffsetsAsk = (i32, i32, OffsetQuery);

/// One partition of a group: where the group is, where the partition ends, and the distance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionLag {
    /// Topic.
    pub topic: String,
    /// Partition id.
    pub partition: i32,
    /// The committed offset (classic and consumer groups) or the start offset (share groups);
    /// none when the group has none for the partition.
    pub offset: Option<i64>,
    /// The high watermark, or the last stable offset under read_committed.
    pub end: Option<i64>,
    /// `end - offset`, when both are known.
    pub lag: Option<i64>,
    /// The member the partition is assigned to, if any.
    pub member: Option<String>,
    /// Kafka's names of the errors met for this partition (its offset, then its end).
    pub errors: Vec<String>,
}

impl PartitionLag {
    pub(crate) fn new(
        TopicPartition { topic, partition }: TopicPartition,
        offset: Option<&Result<i64, i16>>,
        end: Option<&Result<i64, String>>,
        member: Option<&String>,
    ) -> Self {
        let mut errors = Vec::new();
        let offset = match offset {
            Some(Ok(offset)) if *offset >= 0 => Some(*offset),
            Some(Err(code)) => {
                errors.push(format!("offset: {}", error_name(*code)));
                None
            }
            _ => None,
        };
        let end = match end {
            Some(Ok(end)) => Some(*end),
            Some(Err(error)) => {
                errors.push(format!("end offset: {error}"));
                None
            }
            None => None,
        };
        Self {
            topic: topic.to_string(),
            partition,
            offset,
            end,
            lag: offset.zip(end).map(|(offset, end)| end - offset),
            member: member.cloned(),
            errors,
        }
    }
}

/// OffsetFetch of every partition the group has committed, at the highest common version
/// (v8 on: the group inside a batch of groups).
pub(crate) async fn committed_offsets(
    connection: &mut Connection,
    group: &str,
) -> Result<GroupOffsets, Error> {
    let version = connection
        .versions()
        .negotiate::<OffsetFetchRequest>(connection.address())?;
    let id = GroupId(StrBytes::from_string(group.to_owned()));
    // A null topic list asks for every committed partition.
    let request = if version >= 8 {
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(id)
            .with_member_epoch(-1)
            .with_topics(None)])
    } else {
        OffsetFetchRequest::default()
            .with_group_id(id)
            .with_topics(None)
    };
    let response = connection
        .request_at(&request, version, Duration::from_secs(30))
        .await?;
    let mut offsets = GroupOffsets::new();
    let mut put = |topic: &str, partition: i32, offset: i64, code: i16| {
        let answer = if code == 0 { Ok(offset) } else { Err(code) };
        offsets.insert(TopicPartition::new(topic, partition), answer);
    };
    if version >= 8 {
        let Some(found) = response.groups.into_iter().next() else {
            return Ok(offsets);
        };
        if found.error_code != 0 {
            return Err(group_error(
                connection,
                "OffsetFetch",
                group,
                found.error_code,
                None,
            ));
        }
        for topic in &found.topics {
            for p in &topic.partitions {
                put(
                    topic.name.0.as_str(),
                    p.partition_index,
                    p.committed_offset,
                    p.error_code,
                );
            }
        }
    } else {
        if response.error_code != 0 {
            let code = response.error_code;
            return Err(group_error(connection, "OffsetFetch", group, code, None));
        }
        for topic in &response.topics {
            for p in &topic.partitions {
                put(
                    topic.name.0.as_str(),
                    p.partition_index,
                    p.committed_offset,
                    p.error_code,
                );
            }
        }
    }
    // -1 is "nothing committed": not a row of its own.
    offsets.retain(|_, answer| !matches!(answer, Ok(offset) if *offset < 0));
    Ok(offsets)
}

/// DescribeShareGroupOffsets of every partition the share group has state for. A partition
/// not yet initialised answers start offset -1, kept as "none" (it still is a row).
pub(crate) async fn share_start_offsets(
    connection: &mut Connection,
    group: &str,
) -> Result<GroupOffsets, Error> {
    let request = DescribeShareGroupOffsetsRequest::default().with_groups(vec![
        DescribeShareGroupOffsetsRequestGroup::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
            .with_topics(None),
    ]);
    let (_, response) = connection.request(&request).await?;
    let mut offsets = GroupOffsets::new();
    let Some(found) = response.groups.into_iter().next() else {
        return Ok(offsets);
    };
    if found.error_code != 0 {
        let detail = found.error_message.map(|m| m.as_str().to_owned());
        let api = "DescribeShareGroupOffsets";
        return Err(group_error(
            connection,
            api,
            group,
            found.error_code,
            detail,
        ));
    }
    for topic in &found.topics {
        for p in &topic.partitions {
            let answer = if p.error_code == 0 {
                Ok(p.start_offset)
            } else {
                Err(p.error_code)
            };
            offsets.insert(
                TopicPartition::new(topic.topic_name.0.as_str(), p.partition_index),
                answer,
            );
        }
    }
    Ok(offsets)
}

/// The end of each partition (high watermark, or last stable offset when `read_committed`),
/// asked of its leader; a partition without a leader or refused keeps the error's name.
pub(crate) async fn end_offsets(
    client: &mut MetadataClient,
    settings: &ConnectionSettings,
    partitions: &[TopicPartition],
    read_committed: bool,
) -> Result<BTreeMap<TopicPartition, Result<i64, String>>, Error> {
    let mut ends = BTreeMap::new();
    if partitions.is_empty() {
        return Ok(ends);
    }
    let mut topics: Vec<String> = partitions.iter().map(|p| p.topic.to_string()).collect();
    topics.dedup();
    let metadata = client.fetch(&topics).await?;
    // By leader, then topic: ListOffsets asks about one topic at a time here.
    let mut asks: BTreeMap<(i32, &str), Vec<ListOffsetsAsk>> = BTreeMap::new();
    for key in partitions {
        let (topic, partition) = (&*key.topic, key.partition);
        let leader = match metadata.topic(topic) {
            Ok(_) => metadata.partition(topic, partition),
            Err(Error::Broker { name, .. }) => {
                ends.insert(key.clone(), Err(name));
                continue;
            }
            Err(_) => None,
        };
        match leader {
            Some(p) if p.leader >= 0 && metadata.brokers.contains_key(&p.leader) => {
                let ask = (p.partition, p.leader_epoch, OffsetQuery::Latest);
                asks.entry((p.leader, topic)).or_default().push(ask);
            }
            Some(_) => {
                ends.insert(key.clone(), Err(error_name(codes::LEADER_NOT_AVAILABLE)));
            }
            None => {
                ends.insert(
                    key.clone(),
                    Err(error_name(codes::UNKNOWN_TOPIC_OR_PARTITION)),
                );
            }
        }
    }
    let mut connections: HashMap<i32, Connection> = HashMap::new();
    for ((leader, topic), asked) in asks {
        let connection = match connections.entry(leader) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(Connection::connect(&metadata.brokers[&leader], settings).await?)
            }
        };
        for answer in list_offsets(connection, topic, &asked, read_committed).await? {
            let end = if answer.error_code == 0 {
                Ok(answer.offset)
            } else {
                Err(error_name(answer.error_code))
            };
            ends.insert(TopicPartition::new(topic, answer.partition), end);
        }
    }
    Ok(ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_the_end_minus_the_offset_and_errors_stay_with_their_partition() {
        let tp = TopicPartition::new("t", 0);
        let member = "m-1".to_owned();
        let row = PartitionLag::new(tp.clone(), Some(&Ok(4)), Some(&Ok(10)), Some(&member));
        assert_eq!((row.offset, row.end, row.lag), (Some(4), Some(10), Some(6)));
        assert_eq!(row.member.as_deref(), Some("m-1"));
        let uncommitted = PartitionLag::new(tp.clone(), None, Some(&Ok(10)), None);
        assert_eq!((uncommitted.offset, uncommitted.lag), (None, None));
        let uninitialised = PartitionLag::new(tp.clone(), Some(&Ok(-1)), Some(&Ok(3)), None);
        assert_eq!(uninitialised.lag, None);
        let refused = PartitionLag::new(
            tp,
            Some(&Err(29)),
            Some(&Err("NOT_LEADER_OR_FOLLOWER".to_owned())),
            None,
        );
        assert_eq!(
            refused.errors,
            [
                "offset: TOPIC_AUTHORIZATION_FAILED",
                "end offset: NOT_LEADER_OR_FOLLOWER"
            ]
        );
        assert_eq!(refused.lag, None);
    }
}
