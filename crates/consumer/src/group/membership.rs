//! A member that owns partitions but reads none of them: the group shares the partitions out
//! and fences zombies (KIP-447), while the program fetches and commits on its own terms, as
//! `krec mirror` does with a transactional producer's offset commits.

use super::{GroupConsumer, NoListener};
use crate::{ConsumerConfig, Error};

impl GroupConsumer {
    /// Joins the group `config.group` names as a member subscribed to `topics` (names, and
    /// regular expressions starting with `^`, as for [`GroupConsumer::subscribe`]) that owns
    /// partitions but reads none of them: it sends no Fetch, looks up no committed offset and
    /// commits none ([`GroupConsumer::commit`] and [`GroupConsumer::close`] commit nothing;
    /// the program commits, for example with TxnOffsetCommit and
    /// [`GroupConsumer::group_metadata`]). [`GroupConsumer::next_event`] gives
    /// [`GroupEvent::Assigned`], [`GroupEvent::Revoked`] and [`GroupEvent::Lost`] only;
    /// [`GroupConsumer::poll`] is an error.
    ///
    /// Revoked partitions are released to the group when `next_event` is next called: finish
    /// (commit or abort) whatever writes for them before asking for the next event. The
    /// rebalance waits for that, at most
    /// [`GroupConfig::rebalance_timeout`](super::GroupConfig::rebalance_timeout), while the
    /// member goes on heartbeating; after it the partitions are released anyway. Lost
    /// partitions are released at once: another member may own them already. A member keeps
    /// the group's committed offsets from expiring while it is in the group;
    /// [`GroupConsumer::close`] leaves the group, and dropping the member leaves it to expire
    /// after the session timeout. Must be called inside a tokio runtime.
    ///
    /// [`GroupEvent::Assigned`]: super::GroupEvent::Assigned
    /// [`GroupEvent::Revoked`]: super::GroupEvent::Revoked
    /// [`GroupEvent::Lost`]: super::GroupEvent::Lost
    pub async fn membership(mut config: ConsumerConfig, topics: &[&str]) -> Result<Self, Error> {
        config.group.topics = topics.iter().map(|topic| (*topic).to_owned()).collect();
        Self::start(config, Box::new(NoListener), false).await
    }
}
