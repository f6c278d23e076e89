//! The member's group metadata, for a transactional producer's offset commits (KIP-447).

use std::sync::{Arc, Mutex};

use krec_client::group::Committer;

use super::session::Identity;
use super::GroupConsumer;

/// Who the member is in its group now: what a transactional producer's
/// `send_offsets_to_transaction` sends with the offsets (TxnOffsetCommit), so that the group
/// refuses them once a rebalance gave the partitions to another member (KIP-447).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMetadata {
    /// `group.id`.
    pub group_id: String,
    /// The generation (classic protocol) or member epoch (KIP-848) of the last join or
    /// heartbeat; -1 before the first.
    pub generation: i32,
    /// The member id the coordinator gave; empty before the first join.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
}

impl GroupMetadata {
    /// The same, as krec-client's TxnOffsetCommit and OffsetCommit take it.
    pub fn committer(&self) -> Committer<'_> {
        Committer {
            group: &self.group_id,
            generation: self.generation,
            member_id: &self.member_id,
            instance_id: self.group_instance_id.as_deref(),
        }
    }
}

/// The membership task's identity as it publishes it, read by the consumer handle.
#[derive(Clone, Debug)]
pub(crate) struct PublishedIdentity(Arc<Mutex<Identity>>);

impl Default for PublishedIdentity {
    fn default() -> Self {
        PublishedIdentity(Arc::new(Mutex::new(Identity {
            member_id: String::new(),
            generation: -1,
        })))
    }
}

impl PublishedIdentity {
    /// The membership task joined, or a heartbeat answered a new epoch.
    pub(crate) fn publish(&self, identity: &Identity) {
        let mut published = self.0.lock().unwrap_or_else(|p| p.into_inner());
        published.clone_from(identity);
    }

    pub(crate) fn read(&self) -> Identity {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl GroupConsumer {
    /// The member's group metadata now (group id, generation or member epoch, member id,
    /// instance id), for a transactional producer's offset commits (KIP-447).
    pub fn group_metadata(&self) -> GroupMetadata {
        let identity = self.published.read();
        GroupMetadata {
            group_id: self.group.group_id.clone(),
            generation: identity.generation,
            member_id: identity.member_id,
            group_instance_id: self.group.instance_id.clone(),
        }
    }
}
