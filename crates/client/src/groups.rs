//! Groups as an operator asks about them (`kafka-consumer-groups.sh --list` and
//! `--describe`): every group of the cluster with its type and state, and one group's members,
//! assignor and per-partition lag. Classic groups (DescribeGroups), consumer groups of KIP-848
//! (ConsumerGroupDescribe) and share groups of KIP-932 (ShareGroupDescribe) are told apart by
//! asking the coordinator; committed offsets, share start offsets and end offsets are in
//! [`group_lag`](crate::group_lag).
//!
//! Every request goes out at the highest version both sides speak. A broker too old for the
//! newer APIs still answers: ListGroups below v5 names no types (its groups are all classic),
//! and a describe falls back to DescribeGroups.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, DescribeGroupsRequest, GroupId, ListGroupsRequest,
    ListGroupsResponse, ShareGroupDescribeRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::group::{find_coordinator, group_codes};
use super::group_lag::{committed_offsets, end_offsets, share_start_offsets, PartitionLag};
use super::metadata::MetadataClient;
use super::{error_name, Connection, ConnectionSettings};
use crate::{Error, TopicPartition};
use assignment::decode_assignment;

mod assignment;

/// GROUP_ID_NOT_FOUND: no group of the kind asked about has this id.
pub const GROUP_ID_NOT_FOUND: i16 = 69;

/// Attempts at finding a coordinator that is still loading or moving.
const COORDINATOR_ATTEMPTS: u32 = 10;

/// Pause between those attempts.
const COORDINATOR_RETRY_DELAY: Duration = Duration::from_millis(300);

/// One group as ListGroups names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupListing {
    /// Group id.
    pub group: String,
    /// `classic`, `consumer`, `share` or `streams`; `classic` from brokers too old to say
    /// (they have no other kind).
    pub group_type: String,
    /// The classic protocol type (`consumer`, `connect`; empty for a group with only
    /// offsets); the broker's own name for the newer kinds.
    pub protocol_type: String,
    /// The state as the broker reports it (`Stable`, `Empty`, ...); empty from brokers older
    /// than ListGroups v4.
    pub state: String,
}

/// Every group the principal may describe, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupList {
    /// The groups, sorted by id.
    pub groups: Vec<GroupListing>,
    /// Whether every broker reported the groups' types (ListGroups v5, Kafka 3.8+). When not,
    /// the types are `classic` and a type filter other than `classic` matched nothing there.
    pub types_reported: bool,
}

/// Which groups to list (empty: any); matched case-insensitively.
#[derive(Clone, Debug, Default)]
pub struct GroupFilter {
    /// Types: `classic`, `consumer`, `share`, `streams`.
    pub types: Vec<String>,
    /// States: `Stable`, `Empty`, `PreparingRebalance`, ...
    pub states: Vec<String>,
}

impl GroupFilter {
    fn admits(&self, listing: &GroupListing) -> bool {
        let matches = |wanted: &[String], value: &str| {
            wanted.is_empty() || wanted.iter().any(|w| w.eq_ignore_ascii_case(value))
        };
        matches(&self.types, &listing.group_type)
            && (listing.state.is_empty() || matches(&self.states, &listing.state))
    }
}

/// Lists the groups of every broker (each coordinates its own share of them).
pub async fn list_groups(
    client: &mut MetadataClient,
    settings: &ConnectionSettings,
    filter: &GroupFilter,
) -> Result<GroupList, Error> {
    let metadata = client.fetch(&[]).await?;
    let mut brokers: Vec<&String> = metadata.brokers.values().collect();
    brokers.sort();
    let mut groups = BTreeMap::new();
    let mut types_reported = true;
    for address in brokers {
        let mut connection = Connection::connect(address, settings).await?;
        let (reported, listed) = list_on(&mut connection, filter).await?;
        types_reported &= reported;
        for listing in listed.into_iter().filter(|l| filter.admits(l)) {
            groups.insert(listing.group.clone(), listing);
        }
    }
    Ok(GroupList {
        groups: groups.into_values().collect(),
        types_reported,
    })
}

/// One broker's ListGroups, with the filters the version carries.
async fn list_on(
    connection: &mut Connection,
    filter: &GroupFilter,
) -> Result<(bool, Vec<GroupListing>), Error> {
    let version = connection
        .versions()
        .negotiate::<ListGroupsRequest>(connection.address())?;
    let text = |values: &[String]| {
        values
            .iter()
            .map(|v| StrBytes::from_string(v.clone()))
            .collect()
    };
    let mut request = ListGroupsRequest::default();
    if version >= 4 {
        request.states_filter = text(&filter.states);
    }
    if version >= 5 {
        let types: Vec<String> = filter
            .types
            .iter()
            .map(|t| t.to_ascii_lowercase())
            .collect();
        request.types_filter = text(&types);
    }
    let timeout = Duration::from_secs(30);
    let response = connection.request_at(&request, version, timeout).await?;
    if response.error_code != 0 {
        return Err(Error::Broker {
            broker: connection.address().to_owned(),
            api: "ListGroups",
            topic: None,
            partition: None,
            code: response.error_code,
            name: error_name(response.error_code),
        });
    }
    Ok((version >= 5, listings(version, response)))
}

/// The groups of a ListGroups answer at `version`: before v5 no type is sent, and every group
/// of such a broker is classic.
fn listings(version: i16, response: ListGroupsResponse) -> Vec<GroupListing> {
    response
        .groups
        .into_iter()
        .map(|g| GroupListing {
            group: g.group_id.0.as_str().to_owned(),
            group_type: if version >= 5 {
                g.group_type.as_str().to_ascii_lowercase()
            } else {
                "classic".to_owned()
            },
            protocol_type: g.protocol_type.as_str().to_owned(),
            state: g.group_state.as_str().to_owned(),
        })
        .collect()
}

/// One group, described by its coordinator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupDescription {
    /// Group id.
    pub group: String,
    /// `classic`, `consumer` (KIP-848) or `share` (KIP-932).
    pub group_type: String,
    /// The state as the coordinator reports it.
    pub state: String,
    /// Classic groups: the protocol type (`consumer`, `connect`, ...); none for the others.
    pub protocol_type: Option<String>,
    /// The assignor: the classic group's chosen protocol (`range`, `cooperative-sticky`), or
    /// the consumer or share group's server-side assignor (`uniform`, `simple`).
    pub assignor: String,
    /// Group epoch (consumer and share groups).
    pub group_epoch: Option<i32>,
    /// Node id of the coordinator.
    pub coordinator_id: i32,
    /// `host:port` of the coordinator.
    pub coordinator: String,
    /// Members, by member id.
    pub members: Vec<GroupMember>,
    /// Per partition with an offset or an owner: the group's offset, the end, the lag.
    pub partitions: Vec<PartitionLag>,
}

/// One member of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMember {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// The member's host as the coordinator saw it (`/10.0.0.7`).
    pub host: String,
    /// Assigned partitions, sorted.
    pub assignment: Vec<TopicPartition>,
}

/// What the coordinator said about the group itself, before offsets.
pub(crate) struct Described {
    pub(crate) group_type: &'static str,
    pub(crate) state: String,
    pub(crate) protocol_type: Option<String>,
    pub(crate) assignor: String,
    pub(crate) group_epoch: Option<i32>,
    pub(crate) members: Vec<GroupMember>,
}

/// Describes `group`: its coordinator, members and per-partition lag. The end of a partition
/// is its high watermark, or its last stable offset when `read_committed`.
pub async fn describe_group(
    client: &mut MetadataClient,
    settings: &ConnectionSettings,
    group: &str,
    read_committed: bool,
) -> Result<GroupDescription, Error> {
    let (coordinator_id, coordinator) = locate(client, settings, group).await?;
    let mut connection = Connection::connect(&coordinator, settings).await?;
    let described = describe_any(&mut connection, group).await?;
    let offsets = if described.group_type == "share" {
        share_start_offsets(&mut connection, group).await?
    } else {
        committed_offsets(&mut connection, group).await?
    };
    if described.state == "Dead" && described.members.is_empty() && offsets.is_empty() {
        // Brokers before DescribeGroups v6 answer an unknown group as an empty dead one.
        return Err(not_found(&connection, "DescribeGroups", group));
    }
    let owners: BTreeMap<TopicPartition, String> = described
        .members
        .iter()
        .flat_map(|m| {
            m.assignment
                .iter()
                .map(|tp| (tp.clone(), m.member_id.clone()))
        })
        .collect();
    let mut wanted: Vec<TopicPartition> = offsets.keys().cloned().collect();
    wanted.extend(owners.keys().cloned());
    wanted.sort();
    wanted.dedup();
    let ends = end_offsets(client, settings, &wanted, read_committed).await?;
    let partitions = wanted
        .into_iter()
        .map(|tp| PartitionLag::new(tp.clone(), offsets.get(&tp), ends.get(&tp), owners.get(&tp)))
        .collect();
    Ok(GroupDescription {
        group: group.to_owned(),
        group_type: described.group_type.to_owned(),
        state: described.state,
        protocol_type: described.protocol_type,
        assignor: described.assignor,
        group_epoch: described.group_epoch,
        coordinator_id,
        coordinator,
        members: described.members,
        partitions,
    })
}

/// FindCoordinator (key type 0: groups of every kind) through any broker, waiting out a
/// coordinator that is still loading.
async fn locate(
    client: &mut MetadataClient,
    settings: &ConnectionSettings,
    group: &str,
) -> Result<(i32, String), Error> {
    let metadata = client.fetch(&[]).await?;
    let mut brokers: Vec<&String> = metadata.brokers.values().collect();
    brokers.sort();
    let mut last = None;
    for address in brokers {
        let mut connection = match Connection::connect(address, settings).await {
            Ok(connection) => connection,
            Err(error) if error.is_connection_failure() => {
                last = Some(error);
                continue;
            }
            Err(error) => return Err(error),
        };
        for _ in 0..COORDINATOR_ATTEMPTS {
            match find_coordinator(&mut connection, group).await? {
                Ok(found) => return Ok(found),
                Err(code) if group_codes::needs_rediscovery(code) => {
                    last = Some(group_error(
                        &connection,
                        "FindCoordinator",
                        group,
                        code,
                        None,
                    ));
                    tokio::time::sleep(COORDINATOR_RETRY_DELAY).await;
                }
                Err(code) => {
                    return Err(group_error(
                        &connection,
                        "FindCoordinator",
                        group,
                        code,
                        None,
                    ))
                }
            }
        }
    }
    Err(last.unwrap_or_else(|| Error::NoBroker {
        brokers: "the cluster's metadata".to_owned(),
        last: Box::new(Error::InvalidArgument {
            what: "brokers",
            detail: "the cluster named no broker".to_owned(),
        }),
    }))
}

/// Asks the coordinator what kind of group `group` is: KIP-848 consumer, then share, then
/// classic. A broker without an API, or answering GROUP_ID_NOT_FOUND (not that kind), sends
/// the question on to the next kind.
async fn describe_any(connection: &mut Connection, group: &str) -> Result<Described, Error> {
    if speaks::<ConsumerGroupDescribeRequest>(connection) {
        if let Some(described) = describe_consumer(connection, group).await? {
            return Ok(described);
        }
    }
    if speaks::<ShareGroupDescribeRequest>(connection) {
        if let Some(described) = describe_share(connection, group).await? {
            return Ok(described);
        }
    }
    describe_classic(connection, group).await
}

fn speaks<R: crate::wire::ApiRequest>(connection: &Connection) -> bool {
    connection
        .versions()
        .negotiate::<R>(connection.address())
        .is_ok()
}

fn group_id(group: &str) -> GroupId {
    GroupId(StrBytes::from_string(group.to_owned()))
}

/// The group-level answer of a describe: `Ok(None)` when the group is not of that kind.
fn check_group(
    connection: &Connection,
    api: &'static str,
    group: &str,
    code: i16,
    message: Option<&StrBytes>,
) -> Result<Option<()>, Error> {
    match code {
        0 => Ok(Some(())),
        // A broker with the feature off (share groups before 4.2) may answer the request but
        // refuse it: the group is then of another kind.
        GROUP_ID_NOT_FOUND | crate::codes::UNSUPPORTED_VERSION => Ok(None),
        code => Err(group_error(
            connection,
            api,
            group,
            code,
            message.map(|m| m.as_str().to_owned()),
        )),
    }
}

pub(crate) fn group_error(
    connection: &Connection,
    api: &'static str,
    group: &str,
    code: i16,
    detail: Option<String>,
) -> Error {
    Error::Group {
        broker: connection.address().to_owned(),
        api,
        group: group.to_owned(),
        code,
        name: error_name(code),
        detail,
    }
}

fn not_found(connection: &Connection, api: &'static str, group: &str) -> Error {
    group_error(connection, api, group, GROUP_ID_NOT_FOUND, None)
}

/// A ConsumerGroupDescribe or ShareGroupDescribe group as a [`Described`]: kafka-protocol
/// generates one type per API, their fields spelled alike (a share member has no instance id).
macro_rules! described {
    ($found:expr, $group_type:literal, |$member:ident| $instance_id:expr) => {{
        let found = $found;
        let members = found
            .members
            .into_iter()
            .map(|$member| GroupMember {
                instance_id: $instance_id,
                member_id: $member.member_id.as_str().to_owned(),
                client_id: $member.client_id.as_str().to_owned(),
                host: $member.client_host.as_str().to_owned(),
                assignment: named_partitions(
                    $member
                        .assignment
                        .topic_partitions
                        .iter()
                        .map(|t| (t.topic_name.0.as_str(), t.partitions.as_slice())),
                ),
            })
            .collect();
        Described {
            group_type: $group_type,
            state: found.group_state.as_str().to_owned(),
            protocol_type: None,
            assignor: found.assignor_name.as_str().to_owned(),
            group_epoch: Some(found.group_epoch),
            members: sorted(members),
        }
    }};
}

async fn describe_consumer(
    connection: &mut Connection,
    group: &str,
) -> Result<Option<Described>, Error> {
    let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![group_id(group)]);
    let (_, response) = connection.request(&request).await?;
    let Some(found) = response.groups.into_iter().next() else {
        return Ok(None);
    };
    let (code, message) = (found.error_code, found.error_message.clone());
    let described = described!(found, "consumer", |m| m
        .instance_id
        .as_ref()
        .map(|i| i.as_str().to_owned()));
    let api = "ConsumerGroupDescribe";
    Ok(check_group(connection, api, group, code, message.as_ref())?.map(|()| described))
}

async fn describe_share(
    connection: &mut Connection,
    group: &str,
) -> Result<Option<Described>, Error> {
    let request = ShareGroupDescribeRequest::default().with_group_ids(vec![group_id(group)]);
    let (_, response) = connection.request(&request).await?;
    let Some(found) = response.groups.into_iter().next() else {
        return Ok(None);
    };
    let (code, message) = (found.error_code, found.error_message.clone());
    let described = described!(found, "share", |m| None);
    let api = "ShareGroupDescribe";
    Ok(check_group(connection, api, group, code, message.as_ref())?.map(|()| described))
}

async fn describe_classic(connection: &mut Connection, group: &str) -> Result<Described, Error> {
    let request = DescribeGroupsRequest::default().with_groups(vec![group_id(group)]);
    let (_, response) = connection.request(&request).await?;
    let api = "DescribeGroups";
    let Some(found) = response.groups.into_iter().next() else {
        return Err(not_found(connection, api, group));
    };
    if check_group(
        connection,
        api,
        group,
        found.error_code,
        found.error_message.as_ref(),
    )?
    .is_none()
    {
        return Err(not_found(connection, api, group));
    }
    let protocol_type = found.protocol_type.as_str().to_owned();
    let members = found
        .members
        .into_iter()
        .map(|m| GroupMember {
            member_id: m.member_id.as_str().to_owned(),
            instance_id: m.group_instance_id.map(|i| i.as_str().to_owned()),
            client_id: m.client_id.as_str().to_owned(),
            host: m.client_host.as_str().to_owned(),
            // Only the consumer protocol's assignment has a layout known to every client.
            assignment: if protocol_type == "consumer" {
                decode_assignment(&m.member_assignment).unwrap_or_default()
            } else {
                Vec::new()
            },
        })
        .collect();
    Ok(Described {
        group_type: "classic",
        state: found.group_state.as_str().to_owned(),
        protocol_type: Some(protocol_type),
        assignor: found.protocol_data.as_str().to_owned(),
        group_epoch: None,
        members: sorted(members),
    })
}

fn named_partitions<'a>(topics: impl Iterator<Item = (&'a str, &'a [i32])>) -> Vec<TopicPartition> {
    let mut flat: Vec<TopicPartition> = topics
        .flat_map(|(topic, partitions)| {
            let topic: std::sync::Arc<str> = std::sync::Arc::from(topic);
            partitions
                .iter()
                .map(move |&partition| TopicPartition::new(topic.clone(), partition))
        })
        .collect();
    flat.sort();
    flat
}

fn sorted(mut members: Vec<GroupMember>) -> Vec<GroupMember> {
    members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    members
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broker_before_list_groups_v5_has_only_classic_groups() {
        use kafka_protocol::messages::list_groups_response::ListedGroup;
        let listed = |group_type: &'static str| {
            ListGroupsResponse::default().with_groups(vec![ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_static_str("g")))
                .with_protocol_type(StrBytes::from_static_str("consumer"))
                .with_group_state(StrBytes::from_static_str("Stable"))
                .with_group_type(StrBytes::from_static_str(group_type))])
        };
        assert_eq!(listings(5, listed("Consumer"))[0].group_type, "consumer");
        let old = listings(4, listed(""));
        assert_eq!(
            (old[0].group_type.as_str(), old[0].state.as_str()),
            ("classic", "Stable")
        );
    }

    #[test]
    fn the_filter_matches_types_and_states_case_insensitively() {
        let listing = |t: &str, s: &str| GroupListing {
            group: "g".to_owned(),
            group_type: t.to_owned(),
            protocol_type: String::new(),
            state: s.to_owned(),
        };
        let filter = GroupFilter {
            types: vec!["Share".to_owned()],
            states: vec!["stable".to_owned()],
        };
        assert!(filter.admits(&listing("share", "Stable")));
        assert!(!filter.admits(&listing("classic", "Stable")));
        assert!(!filter.admits(&listing("share", "Empty")));
        assert!(GroupFilter::default().admits(&listing("streams", "")));
    }
}
