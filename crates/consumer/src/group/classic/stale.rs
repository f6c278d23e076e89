//! A static leader back in a stable group: the coordinator replaced it without a rebalance
//! and told it to skip the assignment (KIP-814), though its subscription may have changed
//! since the group's assignment was made (a restart with one more topic). The coordinator
//! never notices: it compares only the chosen assignor.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::{DescribeGroupsRequest, GroupId};
use kafka_protocol::protocol::StrBytes;
use krec_client::wire::JoinGroupResponseMember;

use super::super::assignor::TopicPartition;
use super::super::session::Session;
use super::super::wire;
use crate::Error;

/// Whether the group's assignment no longer fits `members`' subscriptions: a partition of a
/// subscribed topic that no member owns, or one owned by a member not subscribed to its
/// topic. Then the leader must rejoin, which makes the coordinator rebalance.
pub(super) async fn assignment_is_stale(
    session: &mut Session,
    members: &[JoinGroupResponseMember],
) -> Result<bool, Error> {
    let mut subscribed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for member in members {
        let id = member.member_id.as_str();
        let subscription = wire::decode_subscription(id, None, &member.metadata)
            .map_err(|e| protocol_error(session, e.0))?;
        subscribed.insert(id.to_owned(), subscription.topics.into_iter().collect());
    }
    let owners = assignments(session).await?;
    for (partition, owner) in &owners {
        let wanted = subscribed.get(owner);
        if !wanted.is_some_and(|topics| topics.contains(&*partition.topic)) {
            tracing::info!(%partition, owner, "assigned to a member not subscribed to it");
            return Ok(true);
        }
    }
    let topics: BTreeSet<&String> = subscribed.values().flatten().collect();
    let topics: Vec<String> = topics.into_iter().cloned().collect();
    let cluster = session.metadata.lock().await.fetch(&topics).await?;
    for topic in &topics {
        let Ok(found) = cluster.topic(topic) else {
            continue;
        };
        for partition in 0..found.partitions.len() as i32 {
            let partition = TopicPartition::new(&**topic, partition);
            if !owners.contains_key(&partition) {
                tracing::info!(%partition, "subscribed to but assigned to no member");
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Every member's assignment as the coordinator keeps it (DescribeGroups): partition, owner.
async fn assignments(session: &mut Session) -> Result<BTreeMap<TopicPartition, String>, Error> {
    let group = session.config.group_id.clone();
    let request = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(StrBytes::from_string(group.clone()))]);
    let connection = session.coordinator().await?;
    let (_, response) = connection.request(&request).await.map_err(Error::from)?;
    let Some(described) = response.groups.into_iter().next() else {
        return Err(protocol_error(
            session,
            "DescribeGroups answered no group".to_owned(),
        ));
    };
    if described.error_code != 0 {
        return Err(session.group_error("DescribeGroups", described.error_code));
    }
    let mut owners = BTreeMap::new();
    // A member that has not synced yet has no assignment.
    for member in described
        .members
        .iter()
        .filter(|m| !m.member_assignment.is_empty())
    {
        let assigned = wire::decode_assignment(&member.member_assignment)
            .map_err(|e| protocol_error(session, e.0))?;
        for partition in assigned {
            owners.insert(partition, member.member_id.as_str().to_owned());
        }
    }
    Ok(owners)
}

fn protocol_error(session: &Session, what: String) -> Error {
    Error::GroupProtocol {
        group: session.config.group_id.clone(),
        what,
    }
}

impl super::Classic {
    /// A static leader back without a rebalance: whether the group's assignment still fits
    /// the members' subscriptions (a failed look keeps it, as the coordinator did).
    pub(super) async fn assignment_is_stale(
        &mut self,
        members: &[JoinGroupResponseMember],
    ) -> bool {
        match assignment_is_stale(&mut self.session, members).await {
            Ok(true) => {
                tracing::info!(
                    "the group's assignment predates the members' subscriptions; \
                    rejoining to rebalance"
                );
                true
            }
            Ok(false) => false,
            Err(error) => {
                tracing::warn!(%error, "checking the group's assignment failed; keeping it");
                false
            }
        }
    }
}
