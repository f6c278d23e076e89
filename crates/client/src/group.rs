//! Group coordinator requests: FindCoordinator (of a group, or of a transactional id),
//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat (KIP-848), OffsetFetch
//! and OffsetCommit.
//!
//! Each function sends one request and returns the answer with Kafka's error codes left for
//! the caller, which knows which of them mean "rejoin", "rediscover" or "give up".

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, FindCoordinatorRequest, GroupId,
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, OffsetCommitRequest,
    SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::Connection;
use crate::{Error, TopicPartition};

mod committed;

pub use committed::{fetch_committed, CommittedPosition};

/// Group error codes this client reacts to by name.
pub mod group_codes {
    /// COORDINATOR_LOAD_IN_PROGRESS.
    pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
    /// COORDINATOR_NOT_AVAILABLE.
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    /// NOT_COORDINATOR.
    pub const NOT_COORDINATOR: i16 = 16;
    /// ILLEGAL_GENERATION.
    pub const ILLEGAL_GENERATION: i16 = 22;
    /// UNKNOWN_MEMBER_ID.
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    /// REBALANCE_IN_PROGRESS.
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    /// MEMBER_ID_REQUIRED (JoinGroup v4+: join again with the id in the answer).
    pub const MEMBER_ID_REQUIRED: i16 = 79;
    /// FENCED_INSTANCE_ID: another process uses this `group.instance.id`.
    pub const FENCED_INSTANCE_ID: i16 = 82;
    /// UNSTABLE_OFFSET_COMMIT: a transaction is still committing offsets of the partition.
    pub const UNSTABLE_OFFSET_COMMIT: i16 = 88;
    /// FENCED_MEMBER_EPOCH (KIP-848).
    pub const FENCED_MEMBER_EPOCH: i16 = 110;
    /// UNRELEASED_INSTANCE_ID (KIP-848).
    pub const UNRELEASED_INSTANCE_ID: i16 = 111;
    /// STALE_MEMBER_EPOCH (KIP-848).
    pub const STALE_MEMBER_EPOCH: i16 = 113;

    /// The member's view of the group is out of date (a rebalance, an expired membership, an
    /// old epoch): a commit refused with one of these is not lost work, since the partitions'
    /// next owner starts at the last commit.
    pub fn is_membership_change(code: i16) -> bool {
        matches!(
            code,
            REBALANCE_IN_PROGRESS
                | UNKNOWN_MEMBER_ID
                | ILLEGAL_GENERATION
                | FENCED_MEMBER_EPOCH
                | STALE_MEMBER_EPOCH
        )
    }

    /// The coordinator moved or is not ready: find it again and retry.
    pub fn needs_rediscovery(code: i16) -> bool {
        matches!(
            code,
            COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR
        )
    }
}

/// What a coordinator is looked up for: FindCoordinator's key type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CoordinatorType {
    /// A group's coordinator (key type 0), keyed by group id.
    Group,
    /// A transactional id's coordinator (key type 1), keyed by `transactional.id`.
    Transaction,
}

impl CoordinatorType {
    /// The key type on the wire.
    pub fn key_type(self) -> i8 {
        match self {
            CoordinatorType::Group => 0,
            CoordinatorType::Transaction => 1,
        }
    }
}

/// FindCoordinator (key type 0: group): the coordinator's node id and `host:port`, or the
/// error code it answered with.
pub async fn find_coordinator(
    connection: &mut Connection,
    group: &str,
) -> Result<Result<(i32, String), i16>, Error> {
    find_coordinator_of(connection, CoordinatorType::Group, group).await
}

/// FindCoordinator of `key` for `kind` (a group id, or a `transactional.id`): the
/// coordinator's node id and `host:port`, or the error code it answered with. A broker
/// speaking only v0 (no key type) finds group coordinators only.
pub async fn find_coordinator_of(
    connection: &mut Connection,
    kind: CoordinatorType,
    key: &str,
) -> Result<Result<(i32, String), i16>, Error> {
    let version = connection
        .versions()
        .negotiate::<FindCoordinatorRequest>(connection.address())?;
    if version < 1 && kind != CoordinatorType::Group {
        return Err(Error::UnsupportedVersion {
            broker: connection.address().to_owned(),
            api: "FindCoordinator of a transactional id",
            broker_min: 0,
            broker_max: version,
            ours_min: 1,
            ours_max: <FindCoordinatorRequest as kafka_protocol::protocol::Message>::VERSIONS.max,
        });
    }
    let key = StrBytes::from_string(key.to_owned());
    let request = FindCoordinatorRequest::default().with_key_type(kind.key_type());
    // v4 moved the key into a batch of keys; each layout refuses the other's field.
    let request = if version >= 4 {
        request.with_coordinator_keys(vec![key])
    } else {
        request.with_key(key)
    };
    let timeout = Duration::from_secs(30);
    let response = connection.request_at(&request, version, timeout).await?;
    if version >= 4 {
        let Some(found) = response.coordinators.first() else {
            return Ok(Err(group_codes::COORDINATOR_NOT_AVAILABLE));
        };
        if found.error_code != 0 {
            return Ok(Err(found.error_code));
        }
        return Ok(Ok((
            found.node_id.0,
            format!("{}:{}", found.host.as_str(), found.port),
        )));
    }
    if response.error_code != 0 {
        return Ok(Err(response.error_code));
    }
    Ok(Ok((
        response.node_id.0,
        format!("{}:{}", response.host.as_str(), response.port),
    )))
}

/// What a member sends in JoinGroup.
#[derive(Clone, Debug)]
pub struct JoinRequest<'a> {
    /// Group id.
    pub group: &'a str,
    /// Member id (empty on the first join).
    pub member_id: &'a str,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<&'a str>,
    /// Session timeout.
    pub session_timeout: Duration,
    /// Rebalance timeout.
    pub rebalance_timeout: Duration,
    /// `(assignor name, subscription metadata)` in preference order.
    pub protocols: Vec<(&'static str, Bytes)>,
}

/// JoinGroup. The coordinator holds the answer until the rebalance completes, so the wait is
/// the rebalance timeout plus the connection's own request timeout.
pub async fn join_group(
    connection: &mut Connection,
    join: &JoinRequest<'_>,
    request_timeout: Duration,
) -> Result<JoinGroupResponse, Error> {
    let request = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(join.group.to_owned())))
        .with_session_timeout_ms(millis(join.session_timeout))
        .with_rebalance_timeout_ms(millis(join.rebalance_timeout))
        .with_member_id(StrBytes::from_string(join.member_id.to_owned()))
        .with_group_instance_id(
            join.instance_id
                .map(|i| StrBytes::from_string(i.to_owned())),
        )
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(
            join.protocols
                .iter()
                .map(|(name, metadata)| {
                    JoinGroupRequestProtocol::default()
                        .with_name(StrBytes::from_static_str(name))
                        .with_metadata(metadata.clone())
                })
                .collect(),
        );
    let wait = join.rebalance_timeout + request_timeout;
    let (_, response) = connection.request_capped(&request, i16::MAX, wait).await?;
    Ok(response)
}

/// SyncGroup: the leader sends every member's assignment, the others none. Returns the error
/// code and this member's assignment bytes.
#[allow(clippy::too_many_arguments)]
pub async fn sync_group(
    connection: &mut Connection,
    group: &str,
    generation: i32,
    member_id: &str,
    instance_id: Option<&str>,
    protocol: &str,
    assignments: Vec<(String, Bytes)>,
    timeout: Duration,
) -> Result<(i16, Bytes), Error> {
    let request = SyncGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_generation_id(generation)
        .with_member_id(StrBytes::from_string(member_id.to_owned()))
        .with_group_instance_id(instance_id.map(|i| StrBytes::from_string(i.to_owned())))
        .with_protocol_type(Some(StrBytes::from_static_str("consumer")))
        .with_protocol_name(Some(StrBytes::from_string(protocol.to_owned())))
        .with_assignments(
            assignments
                .into_iter()
                .map(|(member, assignment)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(StrBytes::from_string(member))
                        .with_assignment(assignment)
                })
                .collect(),
        );
    let (_, response) = connection
        .request_capped(&request, i16::MAX, timeout)
        .await?;
    Ok((response.error_code, response.assignment))
}

/// Heartbeat; returns the error code.
pub async fn heartbeat(
    connection: &mut Connection,
    group: &str,
    generation: i32,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<i16, Error> {
    let request = HeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_generation_id(generation)
        .with_member_id(StrBytes::from_string(member_id.to_owned()))
        .with_group_instance_id(instance_id.map(|i| StrBytes::from_string(i.to_owned())));
    let (_, response) = connection.request(&request).await?;
    Ok(response.error_code)
}

/// LeaveGroup for one member; returns the error code (the member's own, when the version
/// reports per member).
pub async fn leave_group(
    connection: &mut Connection,
    group: &str,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<i16, Error> {
    let version = connection
        .versions()
        .negotiate::<LeaveGroupRequest>(connection.address())?;
    let group_id = GroupId(StrBytes::from_string(group.to_owned()));
    // v3 replaced the single member id by a batch of member identities.
    let request = if version >= 3 {
        LeaveGroupRequest::default()
            .with_group_id(group_id)
            .with_members(vec![MemberIdentity::default()
                .with_member_id(StrBytes::from_string(member_id.to_owned()))
                .with_group_instance_id(instance_id.map(|i| StrBytes::from_string(i.to_owned())))
                .with_reason(
                    (version >= 5).then(|| StrBytes::from_static_str("the consumer is closing")),
                )])
    } else {
        LeaveGroupRequest::default()
            .with_group_id(group_id)
            .with_member_id(StrBytes::from_string(member_id.to_owned()))
    };
    let response = connection
        .request_at(&request, version, Duration::from_secs(30))
        .await?;
    if response.error_code != 0 {
        return Ok(response.error_code);
    }
    Ok(response.members.first().map_or(0, |m| m.error_code))
}

/// One partition's committed offset as OffsetFetch reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The committed offset (-1: none).
    pub offset: i64,
    /// Kafka error code (0 when fine).
    pub error_code: i16,
}

/// OffsetFetch (at most v7: one group, topics by name) of `partitions`, stable offsets only.
/// Returns the group-level error code and the per-partition answers. [`fetch_committed`]
/// also returns the metadata committed, and UNSTABLE_OFFSET_COMMIT as a typed error.
pub async fn offset_fetch(
    connection: &mut Connection,
    group: &str,
    partitions: &BTreeMap<String, Vec<i32>>,
) -> Result<(i16, BTreeMap<TopicPartition, CommittedOffset>), Error> {
    let request = committed::offset_fetch_request(group, partitions, true);
    let timeout = Duration::from_secs(30);
    let (_, response) = connection
        .request_capped(&request, committed::LAST_SINGLE_GROUP_VERSION, timeout)
        .await?;
    let mut answers = BTreeMap::new();
    for topic in response.topics {
        let name: Arc<str> = Arc::from(topic.name.0.as_str());
        for p in topic.partitions {
            answers.insert(
                TopicPartition::new(name.clone(), p.partition_index),
                CommittedOffset {
                    offset: p.committed_offset,
                    error_code: p.error_code,
                },
            );
        }
    }
    Ok((response.error_code, answers))
}

/// Who commits: the generation (classic) or member epoch (KIP-848) and the member.
#[derive(Clone, Debug)]
pub struct Committer<'a> {
    /// Group id.
    pub group: &'a str,
    /// Generation id (classic) or member epoch (KIP-848).
    pub generation: i32,
    /// Member id.
    pub member_id: &'a str,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<&'a str>,
}

/// OffsetCommit of `offsets` (partition -> next offset to read); returns each
/// partition's error code.
pub async fn offset_commit(
    connection: &mut Connection,
    committer: &Committer<'_>,
    offsets: &BTreeMap<TopicPartition, i64>,
) -> Result<Vec<(TopicPartition, i16)>, Error> {
    let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for (TopicPartition { topic, partition }, offset) in offsets {
        topics.entry(&**topic).or_default().push(
            OffsetCommitRequestPartition::default()
                .with_partition_index(*partition)
                .with_committed_offset(*offset)
                .with_committed_leader_epoch(-1),
        );
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(committer.group.to_owned())))
        .with_generation_id_or_member_epoch(committer.generation)
        .with_member_id(StrBytes::from_string(committer.member_id.to_owned()))
        .with_group_instance_id(
            committer
                .instance_id
                .map(|i| StrBytes::from_string(i.to_owned())),
        )
        .with_retention_time_ms(-1)
        .with_topics(
            topics
                .into_iter()
                .map(|(topic, partitions)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let (_, response) = connection.request(&request).await?;
    Ok(response
        .topics
        .into_iter()
        .flat_map(|topic| {
            let name: Arc<str> = Arc::from(topic.name.0.as_str());
            topic.partitions.into_iter().map(move |p| {
                (
                    TopicPartition::new(name.clone(), p.partition_index),
                    p.error_code,
                )
            })
        })
        .collect())
}

/// What a member sends in a ConsumerGroupHeartbeat (KIP-848).
#[derive(Clone, Debug)]
pub struct ConsumerHeartbeat<'a> {
    /// Group id.
    pub group: &'a str,
    /// Member id (generated by the client for v1+).
    pub member_id: &'a str,
    /// Member epoch: 0 to join, -1 to leave, -2 for a static member leaving temporarily.
    pub member_epoch: i32,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<&'a str>,
    /// Rebalance timeout.
    pub rebalance_timeout: Duration,
    /// Subscribed topics (None: unchanged since the last heartbeat).
    pub topics: Option<&'a [String]>,
    /// Subscribed topic regex, evaluated by the broker against whole topic names in RE2/J
    /// syntax (v1+; None: unchanged, or not used).
    pub topic_regex: Option<&'a str>,
    /// Server-side assignor name (None: the broker's default).
    pub server_assignor: Option<&'a str>,
    /// Partitions owned, by topic id (None: unchanged since the last heartbeat).
    pub owned: Option<&'a BTreeMap<Uuid, Vec<i32>>>,
}

/// ConsumerGroupHeartbeat.
pub async fn consumer_group_heartbeat(
    connection: &mut Connection,
    heartbeat: &ConsumerHeartbeat<'_>,
) -> Result<ConsumerGroupHeartbeatResponse, Error> {
    let request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(heartbeat.group.to_owned())))
        .with_member_id(StrBytes::from_string(heartbeat.member_id.to_owned()))
        .with_member_epoch(heartbeat.member_epoch)
        .with_instance_id(
            heartbeat
                .instance_id
                .map(|i| StrBytes::from_string(i.to_owned())),
        )
        .with_rebalance_timeout_ms(millis(heartbeat.rebalance_timeout))
        .with_subscribed_topic_names(heartbeat.topics.map(|topics| {
            topics
                .iter()
                .map(|t| TopicName(StrBytes::from_string(t.clone())))
                .collect()
        }))
        .with_subscribed_topic_regex(
            heartbeat
                .topic_regex
                .map(|r| StrBytes::from_string(r.to_owned())),
        )
        .with_server_assignor(
            heartbeat
                .server_assignor
                .map(|a| StrBytes::from_string(a.to_owned())),
        )
        .with_topic_partitions(heartbeat.owned.map(|owned| {
            owned
                .iter()
                .map(|(id, partitions)| {
                    TopicPartitions::default()
                        .with_topic_id(*id)
                        .with_partitions(partitions.clone())
                })
                .collect()
        }));
    if heartbeat.topic_regex.is_some() {
        require_regex_version(connection)?;
    }
    let (_, response) = connection.request(&request).await?;
    Ok(response)
}

/// ConsumerGroupHeartbeat carries `SubscribedTopicRegex` from v1 (Kafka 4.0) on.
fn require_regex_version(connection: &Connection) -> Result<(), Error> {
    const REGEX_VERSION: i16 = 1;
    let version = connection
        .versions()
        .negotiate::<ConsumerGroupHeartbeatRequest>(connection.address())?;
    if version >= REGEX_VERSION {
        return Ok(());
    }
    let (broker_min, broker_max) = connection
        .versions()
        .range(<ConsumerGroupHeartbeatRequest as crate::wire::ApiRequest>::KEY)
        .unwrap_or((-1, -1));
    Err(Error::UnsupportedVersion {
        broker: connection.address().to_owned(),
        api: "ConsumerGroupHeartbeat with a topic regex",
        broker_min,
        broker_max,
        ours_min: REGEX_VERSION,
        ours_max: <ConsumerGroupHeartbeatRequest as kafka_protocol::protocol::Message>::VERSIONS
            .max,
    })
}

fn millis(duration: Duration) -> i32 {
    duration.as_millis().min(i32::MAX as u128) as i32
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    use kafka_protocol::messages::{ApiKey, BrokerId, FindCoordinatorResponse};
    use krec_testkit::broker::{self, answers};

    use super::*;
    use crate::ConnectionSettings;

    /// A fake broker speaking FindCoordinator up to `max`, answering each lookup with the key
    /// type it read as the coordinator's node id (a real single node answers itself for both).
    async fn echoing_key_type(max: i16) -> String {
        broker::start(move |request| match request.api_key {
            ApiKey::ApiVersions => {
                request.answer(&answers::api_versions(&[(ApiKey::FindCoordinator, 0, max)]))
            }
            _ => {
                let asked: FindCoordinatorRequest = request.decode();
                let node = BrokerId(i32::from(asked.key_type));
                let host = StrBytes::from_static_str("127.0.0.1");
                let answer = if request.version >= 4 {
                    FindCoordinatorResponse::default().with_coordinators(vec![
                        Coordinator::default()
                            .with_key(asked.coordinator_keys[0].clone())
                            .with_node_id(node)
                            .with_host(host),
                    ])
                } else {
                    FindCoordinatorResponse::default()
                        .with_node_id(node)
                        .with_host(host)
                };
                request.answer(&answer)
            }
        })
        .await
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_key_type_goes_out_in_batched_and_single_lookups() {
        for max in [6, 3] {
            let address = echoing_key_type(max).await;
            let settings = ConnectionSettings::default();
            let mut connection = Connection::connect(&address, &settings).await.unwrap();
            let by_id = find_coordinator_of(&mut connection, CoordinatorType::Transaction, "t");
            assert_eq!(by_id.await.unwrap().unwrap().0, 1, "v{max}");
            let by_group = find_coordinator(&mut connection, "g")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(by_group.0, 0, "v{max}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_v0_broker_finds_no_transaction_coordinator() {
        let address = echoing_key_type(0).await;
        let settings = ConnectionSettings::default();
        let mut connection = Connection::connect(&address, &settings).await.unwrap();
        let error = find_coordinator_of(&mut connection, CoordinatorType::Transaction, "t")
            .await
            .unwrap_err();
        assert!(matches!(error, Error::UnsupportedVersion { .. }), "{error}");
        assert_eq!(
            find_coordinator(&mut connection, "g")
                .await
                .unwrap()
                .unwrap()
                .0,
            0
        );
    }
}
