//! The consumer group protocol of KIP-848: one ConsumerGroupHeartbeat carries the
//! subscription, the owned partitions and the member epoch; the broker computes assignments
//! and sends each member its target, which the member reaches by revoking first, then taking
//! the new partitions, and reporting what it owns in the next heartbeat.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use tokio::sync::oneshot;
use uuid::Uuid;

use super::assignor::TopicPartition;
use super::session::{within, CommitOutcome, Identity, Session, FINAL_COMMIT_RETRY};
use super::{Command, MemberEvent};
use crate::subscription::is_internal_topic;
use crate::Error;
use krec_client::error_name;
use krec_client::group::{self, group_codes, ConsumerHeartbeat};
use krec_client::wire::ConsumerGroupHeartbeatResponse;

/// The member epoch that leaves the group; -2 leaves as a static member that will be back.
const LEAVE_EPOCH: i32 = -1;
const STATIC_LEAVE_EPOCH: i32 = -2;

/// Runs the membership until it is closed or fails.
#[tracing::instrument(name = "group", skip_all, fields(group = %session.config.group_id))]
pub async fn run(session: Session) {
    let mut member = Member {
        topic_regex: None,
        internal_topics: HashSet::new(),
        held: BTreeSet::new(),
        session,
        identity: Identity {
            member_id: fresh_member_id(),
            generation: 0,
        },
        owned: BTreeSet::new(),
        topic_names: HashMap::new(),
        topic_ids: HashMap::new(),
        interval: Duration::from_millis(100),
        report_full: true,
        answered: tokio::time::Instant::now(),
    };
    member.topic_regex = member.session.subscription.broker_regex();
    if let Err(error) = member.run().await {
        tracing::error!(%error, "group membership failed");
        let _ = member.session.events.send(MemberEvent::Failed(error));
    }
}

/// A member id of our own making (ConsumerGroupHeartbeat v1 has the client choose it): unique
/// by process and time, in UUID form.
fn fresh_member_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let pid = u128::from(std::process::id());
    Uuid::from_u128(nanos ^ (pid << 96)).to_string()
}

struct Member {
    session: Session,
    /// Member id and member epoch (0: joining).
    identity: Identity,
    owned: BTreeSet<TopicPartition>,
    topic_names: HashMap<Uuid, String>,
    topic_ids: HashMap<String, Uuid>,
    interval: Duration,
    /// Send the subscription and owned partitions in the next heartbeat (after joining or a
    /// change; otherwise they are left out, meaning "unchanged").
    report_full: bool,
    /// The subscription's patterns as the one regex the broker evaluates.
    topic_regex: Option<String>,
    /// Topics the metadata flags internal.
    internal_topics: HashSet<String>,
    /// Owned partitions of internal topics the regex matched, never read.
    held: BTreeSet<TopicPartition>,
    /// When the last heartbeat the coordinator answered was sent (the session runs from its
    /// arrival, so the member's own expiry comes no later than the coordinator's).
    answered: tokio::time::Instant,
}

impl Member {
    async fn run(&mut self) -> Result<(), Error> {
        let config = self.session.config.clone();
        let mut commit = tokio::time::interval(config.commit_interval);
        commit.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        commit.tick().await;
        let mut next_heartbeat = tokio::time::Instant::now();
        loop {
            let expiry = self.expiry();
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(expiry.unwrap_or(next_heartbeat)), if expiry.is_some() => {
                    self.expire().await;
                }
                _ = tokio::time::sleep_until(next_heartbeat) => {
                    self.heartbeat().await?;
                    let wait = if self.report_full { Duration::ZERO } else { self.interval };
                    next_heartbeat = tokio::time::Instant::now() + wait;
                }
                _ = commit.tick() => {
                    if let Err(error) = self.commit_before(expiry).await {
                        tracing::warn!(%error, "periodic commit failed; retrying later");
                    }
                }
                command = self.session.commands.recv() => match command {
                    Some(Command::Commit(reply)) => {
                        let result = self.commit_before(expiry).await;
                        let _ = reply.send(result);
                    }
                    Some(Command::Close(reply)) => {
                        let result = self.close().await;
                        let _ = reply.send(result);
                        return Ok(());
                    }
                    None => {
                        let _ = self.close().await;
                        return Ok(());
                    }
                },
            }
        }
    }

    /// When the membership expires without an answered heartbeat (none before joining).
    fn expiry(&self) -> Option<tokio::time::Instant> {
        (self.identity.generation > 0).then(|| self.answered + self.session.config.session_timeout)
    }

    /// No heartbeat answered for the session timeout: the coordinator has removed this member
    /// and handed its partitions to others. They are lost (not committed); the next heartbeat
    /// joins again.
    async fn expire(&mut self) {
        tracing::warn!(session_timeout = ?self.session.config.session_timeout,
            "no heartbeat answered for the session timeout; partitions lost, rejoining");
        self.session.lose_coordinator();
        self.lose_all().await;
    }

    /// Gives every partition up as lost and starts over at epoch 0.
    async fn lose_all(&mut self) {
        let all: Vec<TopicPartition> = self.owned.iter().cloned().collect();
        let all = self.release_held(all);
        self.revoke(&all, true).await;
        self.identity.generation = 0;
        self.report_full = true;
    }

    /// One heartbeat and what its answer says: errors handled, then the answer taken.
    async fn heartbeat(&mut self) -> Result<(), Error> {
        let Some((sent, response)) = self.send_heartbeat().await? else {
            return Ok(());
        };
        if !self.handle_heartbeat_error(&response).await? {
            return Ok(());
        }
        self.take_heartbeat_answer(sent, response).await
    }

    /// Sends a heartbeat, given up at the expiry: when it was sent and the answer, or None
    /// when there is none (the coordinator lost, unreachable or too slow).
    async fn send_heartbeat(
        &mut self,
    ) -> Result<Option<(tokio::time::Instant, ConsumerGroupHeartbeatResponse)>, Error> {
        let config = self.session.config.clone();
        let owned = self.owned_by_id();
        let names = self.session.subscription.names().to_vec();
        let request = ConsumerHeartbeat {
            group: &config.group_id,
            member_id: &self.identity.member_id,
            member_epoch: self.identity.generation,
            instance_id: config.instance_id.as_deref(),
            rebalance_timeout: config.rebalance_timeout,
            topics: self.report_full.then_some(names.as_slice()),
            topic_regex: self.topic_regex.as_deref().filter(|_| self.report_full),
            server_assignor: config.server_assignor.as_deref(),
            owned: self.report_full.then_some(&owned),
        };
        let sent = tokio::time::Instant::now();
        let expiry = self.expiry();
        let asked = async {
            match self.session.coordinator().await {
                Ok(connection) => group::consumer_group_heartbeat(connection, &request)
                    .await
                    .map_err(Error::from),
                Err(error) => Err(error),
            }
        };
        let Some(answer) = within(expiry, asked).await else {
            // The expiry ends the membership at the loop's next turn.
            self.session.lose_coordinator();
            return Ok(None);
        };
        match answer {
            Ok(response) => Ok(Some((sent, response))),
            Err(error) if error.is_connection_failure() => {
                tracing::warn!(%error, "group coordinator unreachable; finding it again");
                self.session.lose_coordinator();
                self.report_full = true;
                tokio::time::sleep(self.session.backoff.0).await;
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Acts on the answer's error code: true when there is none and the answer is to be taken.
    async fn handle_heartbeat_error(
        &mut self,
        response: &ConsumerGroupHeartbeatResponse,
    ) -> Result<bool, Error> {
        match response.error_code {
            0 => return Ok(true),
            group_codes::FENCED_MEMBER_EPOCH | group_codes::UNKNOWN_MEMBER_ID => {
                tracing::warn!(error = %error_name(response.error_code),
                    "membership fenced; partitions lost, rejoining");
                self.lose_all().await;
            }
            group_codes::UNRELEASED_INSTANCE_ID => {
                // The previous process with this instance id has not left yet.
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            code if group_codes::needs_rediscovery(code) => {
                self.session.lose_coordinator();
                self.report_full = true;
                tokio::time::sleep(self.session.backoff.0).await;
            }
            code => {
                let message = response
                    .error_message
                    .as_ref()
                    .map(|m| m.as_str().to_owned());
                tracing::error!(?message, "ConsumerGroupHeartbeat refused");
                return Err(self.session.group_error("ConsumerGroupHeartbeat", code));
            }
        }
        Ok(false)
    }

    /// Takes an answer without error (sent at `sent`): the membership confirmed, the member's
    /// id, epoch and interval, and a new target assignment if there is one.
    async fn take_heartbeat_answer(
        &mut self,
        sent: tokio::time::Instant,
        response: ConsumerGroupHeartbeatResponse,
    ) -> Result<(), Error> {
        self.answered = sent;
        self.session.confirm(true);
        if let Some(id) = response.member_id.as_ref() {
            self.identity.member_id = id.as_str().to_owned();
        }
        self.identity.generation = response.member_epoch;
        self.session.published.publish(&self.identity);
        self.interval = Duration::from_millis(response.heartbeat_interval_ms.max(100) as u64);
        self.report_full = false;
        if let Some(assignment) = response.assignment {
            let target: Vec<(Uuid, Vec<i32>)> = assignment
                .topic_partitions
                .into_iter()
                .map(|t| (t.topic_id, t.partitions))
                .collect();
            self.session.metrics.rebalanced();
            // Acknowledge a new ownership at once; an unchanged one needs none (the broker
            // answers every full heartbeat with the assignment: acknowledging that would loop).
            self.report_full = self.reconcile(target).await?;
        }
        Ok(())
    }

    /// Moves to the broker's target assignment: revoke, then take the new partitions. True
    /// when the owned partitions changed.
    async fn reconcile(&mut self, target: Vec<(Uuid, Vec<i32>)>) -> Result<bool, Error> {
        if target
            .iter()
            .any(|(id, _)| !self.topic_names.contains_key(id))
        {
            self.learn_topic_ids().await?;
        }
        let mut wanted = BTreeSet::new();
        for (id, partitions) in target {
            let Some(name) = self.topic_names.get(&id) else {
                tracing::warn!(topic_id = %id, "assigned a topic id missing from the metadata");
                continue;
            };
            wanted.extend(
                partitions
                    .into_iter()
                    .map(|p| TopicPartition::new(name.as_str(), p)),
            );
        }
        if self.session.subscription.has_patterns() {
            let topics: BTreeSet<&str> = wanted.iter().map(|tp| &*tp.topic).collect();
            self.session.set_matched_topics(topics);
        }
        let revoked: Vec<TopicPartition> = self.owned.difference(&wanted).cloned().collect();
        let added: Vec<TopicPartition> = wanted.difference(&self.owned).cloned().collect();
        if revoked.is_empty() && added.is_empty() {
            return Ok(false);
        }
        tracing::info!(
            epoch = self.identity.generation,
            ?revoked,
            ?added,
            "new target assignment"
        );
        let revoked = self.release_held(revoked);
        let added = self.hold_internal(added);
        self.revoke(&revoked, false).await;
        if !added.is_empty() {
            self.session.hand_over(&added).await?;
            self.owned.extend(added);
        }
        Ok(true)
    }

    /// Keeps partitions of internal topics that the broker's regex matched (it matches every
    /// topic, internal ones too) owned but unread: krec reads an internal topic only when it
    /// is named. Returns the partitions to read.
    fn hold_internal(&mut self, added: Vec<TopicPartition>) -> Vec<TopicPartition> {
        let subscription = &self.session.subscription;
        let (held, read): (Vec<TopicPartition>, Vec<TopicPartition>) =
            added.into_iter().partition(|TopicPartition { topic, .. }| {
                let flagged = self.internal_topics.contains(&**topic);
                is_internal_topic(topic, flagged) && !subscription.is_named(topic)
            });
        if !held.is_empty() {
            tracing::warn!(partitions = ?held,
                "the group's regex matched internal topics; held unread (subscribe to them by name to read them)");
            self.owned.extend(held.iter().cloned());
            self.held.extend(held);
        }
        read
    }

    /// Gives up held partitions at once (nothing of them was handed out); returns the rest.
    fn release_held(&mut self, revoked: Vec<TopicPartition>) -> Vec<TopicPartition> {
        revoked
            .into_iter()
            .filter(|partition| {
                if self.held.remove(partition) {
                    self.owned.remove(partition);
                    return false;
                }
                true
            })
            .collect()
    }

    async fn learn_topic_ids(&mut self) -> Result<(), Error> {
        let subscription = &self.session.subscription;
        let mut metadata = self.session.metadata.lock().await;
        let cluster = if subscription.has_patterns() {
            metadata.fetch_all().await?
        } else {
            metadata.fetch(subscription.names()).await?
        };
        drop(metadata);
        for topic in cluster.topics.values() {
            if topic.is_internal {
                self.internal_topics.insert(topic.name.clone());
            }
            if !topic.topic_id.is_nil() {
                self.topic_names.insert(topic.topic_id, topic.name.clone());
                self.topic_ids.insert(topic.name.clone(), topic.topic_id);
            }
        }
        Ok(())
    }

    fn owned_by_id(&self) -> BTreeMap<Uuid, Vec<i32>> {
        let mut owned: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for TopicPartition { topic, partition } in &self.owned {
            if let Some(id) = self.topic_ids.get(&**topic) {
                owned.entry(*id).or_default().push(*partition);
            }
        }
        owned
    }

    /// Gives partitions up once the consumer has released them (lost ones at once: another
    /// member owns them), committing their written positions unless they were lost.
    async fn revoke(&mut self, partitions: &[TopicPartition], lost: bool) {
        let requested = self.session.request_revoke(partitions, lost);
        if let Some(done) = requested.filter(|_| !lost) {
            self.await_release(partitions, done).await;
        }
        self.session
            .give_up(&self.identity, &mut self.owned, partitions, lost)
            .await;
    }

    /// Waits for the consumer to release revoked partitions, at most the rebalance timeout
    /// (the broker's bound), heartbeating meanwhile: a release slower than the session timeout
    /// must not cost the membership. A refused heartbeat ends the wait (the next one acts).
    async fn await_release(&mut self, partitions: &[TopicPartition], done: oneshot::Receiver<()>) {
        let deadline = tokio::time::Instant::now() + self.session.config.rebalance_timeout;
        tokio::pin!(done);
        loop {
            tokio::select! {
                _ = &mut done => return,
                () = tokio::time::sleep_until(deadline) => {
                    tracing::warn!(?partitions, "revoked partitions not released in time");
                    return;
                }
                () = tokio::time::sleep(self.interval) => {
                    if !self.keep_alive().await {
                        return;
                    }
                }
            }
        }
    }

    /// A heartbeat while partitions are being released: true while the membership stands.
    /// A new assignment in its answer is left: the full heartbeat that follows the release
    /// gets it again.
    async fn keep_alive(&mut self) -> bool {
        let (sent, response) = match self.send_heartbeat().await {
            Ok(Some(answer)) => answer,
            Ok(None) => return true,
            Err(error) => {
                tracing::warn!(%error, "heartbeat failed while partitions are being released");
                return false;
            }
        };
        match response.error_code {
            0 => {
                self.answered = sent;
                self.session.confirm(true);
                true
            }
            code if group_codes::needs_rediscovery(code) => {
                self.session.lose_coordinator();
                true
            }
            code => {
                tracing::warn!(error = %error_name(code),
                    "heartbeat refused while partitions are being released");
                false
            }
        }
    }

    /// Commits every owned partition's written position, retrying for `retry_for` while the
    /// coordinator is away. A refusal because the membership changed is not an error: the
    /// positions stay pending (or the partitions' next owner starts at the last commit).
    async fn commit_owned(&mut self, retry_for: Duration) -> Result<(), Error> {
        if self.identity.generation <= 0 {
            return Ok(());
        }
        let owned = self.owned.clone();
        match self
            .session
            .commit(&self.identity, &owned, retry_for)
            .await?
        {
            CommitOutcome::Done => Ok(()),
            CommitOutcome::Refused(code) if group_codes::is_membership_change(code) => {
                tracing::warn!(error = %error_name(code), "commit refused; positions kept");
                Ok(())
            }
            CommitOutcome::Refused(code) => Err(self.session.group_error("OffsetCommit", code)),
        }
    }

    /// [`Member::commit_owned`] without retries, given up at `expiry`: a commit after it would
    /// come from a member the coordinator has already removed.
    async fn commit_before(&mut self, expiry: Option<tokio::time::Instant>) -> Result<(), Error> {
        match within(expiry, self.commit_owned(Duration::ZERO)).await {
            Some(result) => result,
            None => {
                self.session.lose_coordinator();
                let code = group_codes::COORDINATOR_NOT_AVAILABLE;
                Err(self.session.group_error("OffsetCommit", code))
            }
        }
    }

    /// Final commit, then the leave heartbeat (epoch -1, or -2 for a static member).
    async fn close(&mut self) -> Result<(), Error> {
        let committed = self.commit_owned(FINAL_COMMIT_RETRY).await;
        let config = self.session.config.clone();
        let epoch = if config.instance_id.is_some() {
            STATIC_LEAVE_EPOCH
        } else {
            LEAVE_EPOCH
        };
        let request = ConsumerHeartbeat {
            group: &config.group_id,
            member_id: &self.identity.member_id,
            member_epoch: epoch,
            instance_id: config.instance_id.as_deref(),
            rebalance_timeout: config.rebalance_timeout,
            topics: None,
            topic_regex: None,
            server_assignor: None,
            owned: None,
        };
        let left = match self.session.coordinator().await {
            Ok(connection) => group::consumer_group_heartbeat(connection, &request)
                .await
                .map_err(Error::from),
            Err(error) => Err(error),
        };
        match left {
            Ok(response) if response.error_code == 0 => tracing::info!("left the group"),
            Ok(response) => {
                tracing::warn!(error = %error_name(response.error_code), "leave refused")
            }
            Err(error) => tracing::warn!(%error, "leaving the group failed"),
        }
        committed
    }
}
