//! How a member joins its group: the protocol, the group's settings, and the listener told
//! of assignment changes.

use std::time::Duration;

use super::Assignor;
use crate::{Error, StartOffset, TopicPartition};

/// Which group protocol a member speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupProtocol {
    /// JoinGroup / SyncGroup / Heartbeat, assignment computed by the leader member.
    Classic,
    /// KIP-848's ConsumerGroupHeartbeat, assignment computed by the broker
    /// (`group.protocol=consumer` in the Java client).
    Consumer,
}

impl std::str::FromStr for GroupProtocol {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "classic" => Ok(Self::Classic),
            "consumer" => Ok(Self::Consumer),
            _ => Err(Error::InvalidArgument {
                what: "group protocol",
                detail: format!("{text:?}: expected classic or consumer"),
            }),
        }
    }
}

/// Group membership settings: [`ConsumerConfig::group`](crate::ConsumerConfig::group), the one place a member's settings
/// live (filled by `group.id` and the other group properties, or set field by field).
#[derive(Clone, Debug)]
pub struct GroupConfig {
    /// `group.id`.
    pub group_id: String,
    /// Subscribed topics: names, and regular expressions (entries starting with `^`, see
    /// [`TopicSubscription`](crate::TopicSubscription)). The classic protocol evaluates the patterns here, every
    /// [`ConsumerConfig::metadata_refresh`](crate::ConsumerConfig::metadata_refresh), and rejoins when the matched set changes; KIP-848
    /// sends them to the broker, which evaluates them (RE2/J syntax: the patterns joined by
    /// `|`). [`GroupConsumer::subscribe`](crate::GroupConsumer::subscribe) sets them.
    pub topics: Vec<String>,
    /// Classic or KIP-848.
    pub protocol: GroupProtocol,
    /// Classic protocol: the assignors offered, in preference order (the Java client's
    /// default: range, then cooperative-sticky).
    pub assignors: Vec<Assignor>,
    /// KIP-848: the server-side assignor (`uniform`, `range`; None: the broker's default).
    pub server_assignor: Option<String>,
    /// `group.instance.id` for static membership.
    pub instance_id: Option<String>,
    /// Without a heartbeat for this long the coordinator removes the member. Classic: sent
    /// in JoinGroup. KIP-848: the broker's `group.consumer.session.timeout.ms` decides; set
    /// this to it. Either way, a member whose heartbeats have gone unanswered this long
    /// treats its partitions as lost ([`GroupEvent::Lost`](crate::GroupEvent::Lost)) and joins again.
    pub session_timeout: Duration,
    /// Time between heartbeats (classic; KIP-848 uses the interval the broker sends).
    pub heartbeat_interval: Duration,
    /// How long a rebalance may wait for members to rejoin, and for revoked partitions to be
    /// written out.
    pub rebalance_timeout: Duration,
    /// How often written offsets are committed.
    pub commit_interval: Duration,
    /// Where a partition the group has no committed offset for starts (`auto.offset.reset`):
    /// [`StartOffset::Beginning`] or [`StartOffset::End`].
    pub start_without_commit: StartOffset,
}

impl GroupConfig {
    /// Defaults for a group and its topics (the Java client's defaults where it has them).
    pub fn new(group_id: impl Into<String>, topics: Vec<String>) -> Self {
        Self {
            group_id: group_id.into(),
            topics,
            protocol: GroupProtocol::Classic,
            assignors: vec![Assignor::Range, Assignor::CooperativeSticky],
            server_assignor: None,
            instance_id: None,
            session_timeout: Duration::from_secs(45),
            heartbeat_interval: Duration::from_secs(3),
            rebalance_timeout: Duration::from_secs(60),
            commit_interval: Duration::from_secs(5),
            start_without_commit: StartOffset::Beginning,
        }
    }
}

/// Told when the member's assignment changes. Called from [`GroupConsumer::poll`](crate::GroupConsumer::poll).
pub trait RebalanceListener: Send {
    /// Partitions newly assigned (they start at their committed offsets).
    fn on_assigned(&mut self, _partitions: &[TopicPartition]) {}
    /// Partitions being given up. Nothing more of them is handed out after this call; their
    /// processed positions are committed once everything already handed out is marked
    /// processed ([`GroupProgress`](crate::GroupProgress)).
    fn on_revoked(&mut self, _partitions: &[TopicPartition]) {}
    /// Partitions lost without a chance to commit (the membership expired).
    fn on_lost(&mut self, partitions: &[TopicPartition]) {
        self.on_revoked(partitions);
    }
}

/// A listener that does nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoListener;

impl RebalanceListener for NoListener {}
