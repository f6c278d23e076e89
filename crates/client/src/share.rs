//! Share groups (KIP-932): ShareGroupHeartbeat to the group coordinator, ShareFetch and
//! ShareAcknowledge to each partition's leader.
//!
//! A share group commits no offsets: the leader hands each member *acquired* ranges of records
//! under a time lock, and the member acknowledges every offset it was given (accept, release or
//! reject). Acknowledgements travel as ranges, in the next ShareFetch to that leader or in a
//! ShareAcknowledge. A share session (per member and leader) carries them: epoch 0 opens it,
//! each request increments it, -1 closes it.
//!
//! The answers here are checked beyond their layout: acquired ranges must be ordered, disjoint
//! and non-empty, with a delivery count of at least one, or the answer is a typed error.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckBatchOut,
};
use kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic, ForgottenTopic,
};
use kafka_protocol::messages::{
    GroupId, ShareAcknowledgeRequest, ShareFetchRequest, ShareFetchResponse,
    ShareGroupHeartbeatRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::Connection;
use crate::Error;

/// Share-group error codes this client reacts to by name.
pub mod share_codes {
    /// INVALID_RECORD_STATE: an acknowledged offset is not acquired by this member (its lock
    /// ran out, or its share session was closed).
    pub const INVALID_RECORD_STATE: i16 = 121;
    /// SHARE_SESSION_NOT_FOUND: the leader no longer has this member's share session.
    pub const SHARE_SESSION_NOT_FOUND: i16 = 122;
    /// INVALID_SHARE_SESSION_EPOCH: the request's epoch is not the one the leader expects.
    pub const INVALID_SHARE_SESSION_EPOCH: i16 = 123;
    /// SHARE_SESSION_LIMIT_REACHED: the leader keeps no more share sessions.
    pub const SHARE_SESSION_LIMIT_REACHED: i16 = 133;

    /// The share session must be opened again (epoch 0); its acquired records were released.
    pub fn is_session_error(code: i16) -> bool {
        matches!(
            code,
            SHARE_SESSION_NOT_FOUND | INVALID_SHARE_SESSION_EPOCH | SHARE_SESSION_LIMIT_REACHED
        )
    }
}

/// What a member does with records it acquired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AcknowledgeType {
    /// Processed: never delivered again.
    Accept,
    /// Not processed: delivered again (to any member) at once, its delivery count kept.
    Release,
    /// Unprocessable: never delivered again, archived.
    Reject,
}

impl AcknowledgeType {
    /// The code on the wire (0 is GAP, for offsets with no record).
    pub fn code(self) -> i8 {
        match self {
            Self::Accept => 1,
            Self::Release => 2,
            Self::Reject => 3,
        }
    }

    /// The lowercase name (`accept`, `release`, `reject`), for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Release => "release",
            Self::Reject => "reject",
        }
    }
}

/// Offsets `first_offset..=last_offset` of one partition, acknowledged one way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcknowledgementRange {
    /// First offset.
    pub first_offset: i64,
    /// Last offset (inclusive).
    pub last_offset: i64,
    /// How.
    pub kind: AcknowledgeType,
}

/// A range of records the leader acquired for this member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquiredRange {
    /// First offset.
    pub first_offset: i64,
    /// Last offset (inclusive).
    pub last_offset: i64,
    /// How many times these records have been delivered, this time included.
    pub delivery_count: i16,
}

/// What a member sends in ShareGroupHeartbeat.
#[derive(Clone, Debug)]
pub struct ShareHeartbeat<'a> {
    /// Group id.
    pub group: &'a str,
    /// Member id (the client generates it).
    pub member_id: &'a str,
    /// 0 to join, -1 to leave, else the epoch of the last answer.
    pub member_epoch: i32,
    /// Subscribed topics (None: unchanged since the last heartbeat).
    pub topics: Option<&'a [String]>,
}

/// The coordinator's answer to a ShareGroupHeartbeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareHeartbeatAnswer {
    /// Kafka error code (0 when fine).
    pub error_code: i16,
    /// The broker's words about the error.
    pub error_message: Option<String>,
    /// The member epoch to send next.
    pub member_epoch: i32,
    /// How often to heartbeat.
    pub heartbeat_interval: Duration,
    /// The member's partitions by topic id (None: unchanged).
    pub assignment: Option<BTreeMap<Uuid, Vec<i32>>>,
}

/// ShareGroupHeartbeat.
pub async fn share_group_heartbeat(
    connection: &mut Connection,
    heartbeat: &ShareHeartbeat<'_>,
) -> Result<ShareHeartbeatAnswer, Error> {
    let request = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(heartbeat.group.to_owned())))
        .with_member_id(StrBytes::from_string(heartbeat.member_id.to_owned()))
        .with_member_epoch(heartbeat.member_epoch)
        .with_subscribed_topic_names(heartbeat.topics.map(|topics| {
            topics
                .iter()
                .map(|t| TopicName(StrBytes::from_string(t.clone())))
                .collect()
        }));
    let (_, response) = connection.request(&request).await?;
    let assignment = response.assignment.map(|assignment| {
        let mut partitions: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for topic in assignment.topic_partitions {
            partitions
                .entry(topic.topic_id)
                .or_default()
                .extend(topic.partitions);
        }
        partitions
    });
    Ok(ShareHeartbeatAnswer {
        error_code: response.error_code,
        error_message: response.error_message.map(|m| m.to_string()),
        member_epoch: response.member_epoch,
        heartbeat_interval: Duration::from_millis(response.heartbeat_interval_ms.max(0) as u64),
        assignment,
    })
}

/// Who speaks in a share session, and at which epoch.
#[derive(Clone, Copy, Debug)]
pub struct ShareSessionKey<'a> {
    /// Group id.
    pub group: &'a str,
    /// Member id.
    pub member_id: &'a str,
    /// Share session epoch: 0 opens, then increments; -1 closes.
    pub epoch: i32,
}

/// Request-wide ShareFetch settings.
#[derive(Clone, Copy, Debug)]
pub struct ShareFetchParams {
    /// How long the leader may wait for `min_bytes`.
    pub max_wait_ms: i32,
    /// Bytes to wait for.
    pub min_bytes: i32,
    /// Upper bound of record bytes in the response.
    pub max_bytes: i32,
    /// Upper bound of records acquired by this request.
    pub max_records: i32,
    /// Records the leader should acquire at once, a hint.
    pub batch_size: i32,
}

/// One partition of a ShareFetch or ShareAcknowledge: to fetch from, with acknowledgements.
#[derive(Clone, Copy, Debug)]
pub struct SharePartitionRequest<'a> {
    /// Topic id.
    pub topic_id: Uuid,
    /// Partition id.
    pub partition: i32,
    /// Acknowledgements to deliver, ordered by offset, disjoint.
    pub acknowledgements: &'a [AcknowledgementRange],
}

/// One partition of a ShareFetch answer.
#[derive(Clone, Debug)]
pub struct SharePartitionResponse {
    /// Topic id.
    pub topic_id: Uuid,
    /// Partition id.
    pub partition: i32,
    /// Fetch error code (0 when fine).
    pub error_code: i16,
    /// The broker's words about the fetch error.
    pub error_message: Option<String>,
    /// Error code for the acknowledgements sent with the request (0 when fine).
    pub acknowledge_error_code: i16,
    /// The broker's words about the acknowledgement error.
    pub acknowledge_error_message: Option<String>,
    /// The partition's current leader (id, epoch), when the leader moved (-1 otherwise).
    pub current_leader: (i32, i32),
    /// The record batches: a slice of the response frame, never copied. They may hold
    /// records outside `acquired`, which are not this member's.
    pub records: Bytes,
    /// The ranges acquired for this member, ordered and disjoint.
    pub acquired: Vec<AcquiredRange>,
}

/// A ShareFetch answer.
#[derive(Clone, Debug)]
pub struct ShareFetchAnswer {
    /// Request-wide error code (0 when fine).
    pub error_code: i16,
    /// The broker's words about it.
    pub error_message: Option<String>,
    /// How long the acquired records stay locked to this member.
    pub acquisition_lock_timeout: Duration,
    /// The partitions answered.
    pub partitions: Vec<SharePartitionResponse>,
}

/// One partition's acknowledgements as a request's batches: ShareFetch and ShareAcknowledge
/// each have their own generated batch type, alike field for field.
macro_rules! acknowledgement_batches {
    ($batch:ty, $partition:expr) => {
        $partition
            .acknowledgements
            .iter()
            .map(|a| {
                <$batch>::default()
                    .with_first_offset(a.first_offset)
                    .with_last_offset(a.last_offset)
                    .with_acknowledge_types(vec![a.kind.code()])
            })
            .collect()
    };
}

/// `items` grouped by topic id, topics in the order first met: how both share requests
/// carry their partitions.
fn by_topic<T, P>(
    items: impl IntoIterator<Item = T>,
    topic_id: impl Fn(&T) -> Uuid,
    part: impl Fn(T) -> P,
) -> Vec<(Uuid, Vec<P>)> {
    let mut topics: Vec<(Uuid, Vec<P>)> = Vec::new();
    for item in items {
        let id = topic_id(&item);
        let part = part(item);
        match topics.iter_mut().find(|(topic, _)| *topic == id) {
            Some((_, parts)) => parts.push(part),
            None => topics.push((id, vec![part])),
        }
    }
    topics
}

fn group_id(session: &ShareSessionKey<'_>) -> GroupId {
    GroupId(StrBytes::from_string(session.group.to_owned()))
}

fn member_id(session: &ShareSessionKey<'_>) -> StrBytes {
    StrBytes::from_string(session.member_id.to_owned())
}

/// ShareFetch: fetches `partitions` (acknowledging what each carries) and forgets `forgotten`
/// from the share session. With epoch -1 it only delivers the acknowledgements and closes the
/// session, so `partitions` then carries acknowledgements only.
pub async fn share_fetch(
    connection: &mut Connection,
    session: ShareSessionKey<'_>,
    params: &ShareFetchParams,
    partitions: &[SharePartitionRequest<'_>],
    forgotten: &[(Uuid, i32)],
) -> Result<ShareFetchAnswer, Error> {
    let topics = by_topic(
        partitions.iter(),
        |p| p.topic_id,
        |p| {
            FetchPartition::default()
                .with_partition_index(p.partition)
                .with_acknowledgement_batches(acknowledgement_batches!(AcknowledgementBatch, p))
        },
    )
    .into_iter()
    .map(|(id, parts)| {
        FetchTopic::default()
            .with_topic_id(id)
            .with_partitions(parts)
    })
    .collect();
    let forgotten_topics = by_topic(forgotten.iter(), |(id, _)| *id, |(_, partition)| *partition)
        .into_iter()
        .map(|(id, parts)| {
            ForgottenTopic::default()
                .with_topic_id(id)
                .with_partitions(parts)
        })
        .collect();
    let request = ShareFetchRequest::default()
        .with_group_id(Some(group_id(&session)))
        .with_member_id(Some(member_id(&session)))
        .with_share_session_epoch(session.epoch)
        .with_max_wait_ms(params.max_wait_ms)
        .with_min_bytes(params.min_bytes)
        .with_max_bytes(params.max_bytes)
        .with_max_records(params.max_records)
        .with_batch_size(params.batch_size)
        .with_topics(topics)
        .with_forgotten_topics_data(forgotten_topics);
    let wait = Duration::from_millis(params.max_wait_ms.max(0) as u64);
    let (_, response) = connection.request_with_wait(&request, wait).await?;
    fetch_answer(response).map_err(|detail| Error::Protocol {
        broker: connection.address().to_owned(),
        api: "ShareFetch",
        detail,
    })
}

/// A decoded ShareFetch response as the caller sees it, its acquired ranges checked.
pub(crate) fn fetch_answer(response: ShareFetchResponse) -> Result<ShareFetchAnswer, String> {
    let mut answer = ShareFetchAnswer {
        error_code: response.error_code,
        error_message: response.error_message.map(|m| m.to_string()),
        acquisition_lock_timeout: Duration::from_millis(
            response.acquisition_lock_timeout_ms.max(0) as u64,
        ),
        partitions: Vec::new(),
    };
    for topic in response.responses {
        for p in topic.partitions {
            let acquired = p
                .acquired_records
                .iter()
                .map(|a| AcquiredRange {
                    first_offset: a.first_offset,
                    last_offset: a.last_offset,
                    delivery_count: a.delivery_count,
                })
                .collect();
            answer.partitions.push(SharePartitionResponse {
                topic_id: topic.topic_id,
                partition: p.partition_index,
                error_code: p.error_code,
                error_message: p.error_message.map(|m| m.to_string()),
                acknowledge_error_code: p.acknowledge_error_code,
                acknowledge_error_message: p.acknowledge_error_message.map(|m| m.to_string()),
                current_leader: (p.current_leader.leader_id, p.current_leader.leader_epoch),
                records: p.records.unwrap_or_default(),
                acquired,
            });
        }
    }
    check_acquired(&answer.partitions)?;
    Ok(answer)
}

/// Acquired ranges must be non-empty, ordered, disjoint and delivered at least once.
pub(crate) fn check_acquired(partitions: &[SharePartitionResponse]) -> Result<(), String> {
    for p in partitions {
        let mut after = i64::MIN;
        for range in &p.acquired {
            let where_ = format!(
                "partition {} of topic {}: acquired range {}..={} (delivery count {})",
                p.partition,
                p.topic_id,
                range.first_offset,
                range.last_offset,
                range.delivery_count
            );
            if range.first_offset < 0 || range.last_offset < range.first_offset {
                return Err(format!("{where_} is empty or negative"));
            }
            if range.first_offset <= after && after != i64::MIN {
                return Err(format!("{where_} overlaps or precedes the range before it"));
            }
            if range.delivery_count < 1 {
                return Err(format!("{where_} has a delivery count below 1"));
            }
            after = range.last_offset;
        }
    }
    Ok(())
}

/// Per-partition error codes of a ShareAcknowledge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShareAcknowledgeAnswer {
    /// Request-wide error code (0 when fine).
    pub error_code: i16,
    /// The broker's words about it.
    pub error_message: Option<String>,
    /// `(topic id, partition, error code)` of each partition answered.
    pub partitions: Vec<(Uuid, i32, i16)>,
}

/// ShareAcknowledge: delivers acknowledgements outside a fetch; epoch -1 also closes the share
/// session.
pub async fn share_acknowledge(
    connection: &mut Connection,
    session: ShareSessionKey<'_>,
    partitions: &[SharePartitionRequest<'_>],
) -> Result<ShareAcknowledgeAnswer, Error> {
    let topics = by_topic(
        partitions.iter(),
        |p| p.topic_id,
        |p| {
            AcknowledgePartition::default()
                .with_partition_index(p.partition)
                .with_acknowledgement_batches(acknowledgement_batches!(AckBatchOut, p))
        },
    )
    .into_iter()
    .map(|(id, parts)| {
        AcknowledgeTopic::default()
            .with_topic_id(id)
            .with_partitions(parts)
    })
    .collect();
    let request = ShareAcknowledgeRequest::default()
        .with_group_id(Some(group_id(&session)))
        .with_member_id(Some(member_id(&session)))
        .with_share_session_epoch(session.epoch)
        .with_topics(topics);
    let (_, response) = connection.request(&request).await?;
    Ok(ShareAcknowledgeAnswer {
        error_code: response.error_code,
        error_message: response.error_message.map(|m| m.to_string()),
        partitions: response
            .responses
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic_id, p.partition_index, p.error_code))
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests;
