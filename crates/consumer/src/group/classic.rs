//! The classic group protocol: JoinGroup, SyncGroup (the leader member assigns), Heartbeat,
//! OffsetCommit with the generation, LeaveGroup.
//!
//! Eager assignors (range, roundrobin) give every partition up before rejoining; with
//! cooperative-sticky the member keeps its partitions through the rebalance, gives up only
//! those assigned elsewhere, and rejoins at once so they can move (KIP-429).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::time::Duration;

use bytes::Bytes;

use super::assignor::{Assignor, TopicPartition};
use super::session::{within, CommitOutcome, Identity, Session, FINAL_COMMIT_RETRY};
use super::wire;
use super::{Command, GroupConfig, MemberEvent};
use crate::refresh::Matched;
use crate::Error;
use krec_client::group::{self, group_codes, JoinRequest};
use krec_client::wire::{JoinGroupResponse, JoinGroupResponseMember};

mod stale;
mod subscription;

/// Runs the membership until it is closed or fails.
#[tracing::instrument(name = "group", skip_all, fields(group = %session.config.group_id))]
pub async fn run(session: Session) {
    let mut member = Classic {
        session,
        identity: Identity::default(),
        protocol: None,
        owned: BTreeSet::new(),
        matched: Matched::new(),
        stale: false,
    };
    member.refresh_subscription().await;
    if let Err(error) = member.run().await {
        tracing::error!(%error, "group membership failed");
        let _ = member.session.events.send(MemberEvent::Failed(error));
    }
}

struct Classic {
    session: Session,
    identity: Identity,
    /// The assignor the group chose in the last generation.
    protocol: Option<Assignor>,
    owned: BTreeSet<TopicPartition>,
    /// What the subscription's patterns match now, with partition ids (empty without patterns).
    matched: Matched,
    /// The assignment just taken predates the members' subscriptions: rejoin at once.
    stale: bool,
}

/// What ends the heartbeat phase.
enum Next {
    Rejoin,
    Closed,
}

/// Time allowed for requests that the coordinator answers at once.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

impl Classic {
    async fn run(&mut self) -> Result<(), Error> {
        loop {
            let cooperative = self.protocol.is_some_and(Assignor::is_cooperative);
            if !cooperative && !self.owned.is_empty() {
                let all: Vec<TopicPartition> = self.owned.iter().cloned().collect();
                self.revoke(&all, false).await;
            }
            let Some(assignment) = self.join_and_sync().await? else {
                if let Some(Next::Closed) = self.check_close().await? {
                    return Ok(());
                }
                continue;
            };
            self.session.metrics.rebalanced();
            let rejoin = self.apply(assignment).await?;
            if rejoin || std::mem::take(&mut self.stale) {
                continue;
            }
            match self.heartbeat_phase().await? {
                Next::Rejoin => continue,
                Next::Closed => return Ok(()),
            }
        }
    }

    /// A close asked for while (re)joining: leave now.
    async fn check_close(&mut self) -> Result<Option<Next>, Error> {
        match self.session.commands.try_recv() {
            Ok(Command::Close(reply)) => {
                let result = self.close().await;
                let _ = reply.send(result);
                Ok(Some(Next::Closed))
            }
            Ok(Command::Commit(reply)) => {
                let _ = reply.send(Err(self
                    .session
                    .group_error("OffsetCommit", group_codes::REBALANCE_IN_PROGRESS)));
                Ok(None)
            }
            Err(_) => Ok(None),
        }
    }

    /// One JoinGroup + SyncGroup round: the new assignment, or None to try again.
    async fn join_and_sync(&mut self) -> Result<Option<Vec<TopicPartition>>, Error> {
        let config = self.session.config.clone();
        let Some(response) = self.join(&config).await? else {
            return Ok(None);
        };
        self.identity.member_id = response.member_id.as_str().to_owned();
        self.identity.generation = response.generation_id;
        self.session.published.publish(&self.identity);
        let protocol_name = response
            .protocol_name
            .as_ref()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        let assignor =
            Assignor::from_protocol_name(&protocol_name).ok_or_else(|| Error::GroupProtocol {
                group: config.group_id.clone(),
                what: format!(
                    "the group chose assignor {protocol_name:?}, which krec does not offer"
                ),
            })?;
        self.protocol = Some(assignor);
        let leader = response.leader.as_str() == self.identity.member_id;
        tracing::info!(generation = self.identity.generation, member = %self.identity.member_id,
            leader, assignor = protocol_name, members = response.members.len(), "joined the group");
        let assignments = if leader && !response.skip_assignment {
            self.assign(assignor, &response.members).await?
        } else {
            Vec::new()
        };
        let assignment = self.sync(&config, &protocol_name, assignments).await?;
        if leader && response.skip_assignment && assignment.is_some() {
            self.stale = self.assignment_is_stale(&response.members).await;
        }
        Ok(assignment)
    }

    /// JoinGroup with this member's subscription: the response, or None to try again.
    async fn join(&mut self, config: &GroupConfig) -> Result<Option<JoinGroupResponse>, Error> {
        let owned: Vec<TopicPartition> = self.owned.iter().cloned().collect();
        let topics = self.subscribed_topics();
        let protocols: Vec<(&'static str, Bytes)> = config
            .assignors
            .iter()
            .map(|assignor| {
                let cooperative = assignor.is_cooperative();
                let owned = if cooperative { owned.as_slice() } else { &[] };
                let metadata = wire::encode_subscription(
                    &topics,
                    owned,
                    self.identity.generation,
                    cooperative,
                );
                (assignor.protocol_name(), metadata)
            })
            .collect();
        let join = JoinRequest {
            group: &config.group_id,
            member_id: &self.identity.member_id,
            instance_id: config.instance_id.as_deref(),
            session_timeout: config.session_timeout,
            rebalance_timeout: config.rebalance_timeout,
            protocols,
        };
        let answer = match self.session.coordinator().await {
            Ok(connection) => group::join_group(connection, &join, REQUEST_TIMEOUT)
                .await
                .map_err(Error::from),
            Err(error) => Err(error),
        };
        let response = match answer {
            Ok(response) => response,
            Err(error) => return self.retry_after(error).await.map(|()| None),
        };
        match response.error_code {
            0 => Ok(Some(response)),
            group_codes::MEMBER_ID_REQUIRED => {
                self.identity.member_id = response.member_id.as_str().to_owned();
                Ok(None)
            }
            group_codes::UNKNOWN_MEMBER_ID => {
                self.identity = Identity::default();
                Ok(None)
            }
            group_codes::REBALANCE_IN_PROGRESS | group_codes::ILLEGAL_GENERATION => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(None)
            }
            code if group_codes::needs_rediscovery(code) => {
                self.session.lose_coordinator();
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(None)
            }
            code => Err(self.session.group_error("JoinGroup", code)),
        }
    }

    /// SyncGroup (with the assignments, when leader): this member's assignment, or None to
    /// try again.
    async fn sync(
        &mut self,
        config: &GroupConfig,
        protocol_name: &str,
        assignments: Vec<(String, Bytes)>,
    ) -> Result<Option<Vec<TopicPartition>>, Error> {
        let answer = match self.session.coordinator().await {
            Ok(connection) => group::sync_group(
                connection,
                &config.group_id,
                self.identity.generation,
                &self.identity.member_id,
                config.instance_id.as_deref(),
                protocol_name,
                assignments,
                config.rebalance_timeout + REQUEST_TIMEOUT,
            )
            .await
            .map_err(Error::from),
            Err(error) => Err(error),
        };
        let (code, bytes) = match answer {
            Ok(answer) => answer,
            Err(error) => return self.retry_after(error).await.map(|()| None),
        };
        match code {
            0 => {}
            group_codes::REBALANCE_IN_PROGRESS => return Ok(None),
            group_codes::UNKNOWN_MEMBER_ID => {
                self.identity = Identity::default();
                return Ok(None);
            }
            group_codes::ILLEGAL_GENERATION => return Ok(None),
            code if group_codes::needs_rediscovery(code) => {
                self.session.lose_coordinator();
                return Ok(None);
            }
            code => return Err(self.session.group_error("SyncGroup", code)),
        }
        let assignment = wire::decode_assignment(&bytes).map_err(|e| Error::GroupProtocol {
            group: config.group_id.clone(),
            what: e.0,
        })?;
        Ok(Some(assignment))
    }

    /// A connection problem: find the coordinator again and retry; anything else is fatal.
    async fn retry_after(&mut self, error: Error) -> Result<(), Error> {
        match error {
            error if error.is_connection_failure() => {
                tracing::warn!(%error, "group coordinator unreachable; finding it again");
                self.session.lose_coordinator();
                tokio::time::sleep(self.session.backoff.0).await;
                Ok(())
            }
            other => Err(other),
        }
    }

    /// The leader's work: every member's assignment, encoded for SyncGroup.
    async fn assign(
        &mut self,
        assignor: Assignor,
        members: &[JoinGroupResponseMember],
    ) -> Result<Vec<(String, Bytes)>, Error> {
        let group_id = self.session.config.group_id.clone();
        let mut subscriptions = Vec::with_capacity(members.len());
        for member in members {
            let subscription = wire::decode_subscription(
                member.member_id.as_str(),
                member.group_instance_id.as_ref().map(|i| i.as_str()),
                &member.metadata,
            )
            .map_err(|e| Error::GroupProtocol {
                group: group_id.clone(),
                what: e.0,
            })?;
            subscriptions.push(subscription);
        }
        let topics: BTreeSet<String> = subscriptions
            .iter()
            .flat_map(|s| s.topics.iter().cloned())
            .collect();
        let topics: Vec<String> = topics.into_iter().collect();
        let cluster = self.session.metadata.lock().await.fetch(&topics).await?;
        let counts: BTreeMap<String, i32> = topics
            .iter()
            .filter_map(|topic| {
                let metadata = cluster.topic(topic).ok()?;
                Some((topic.clone(), metadata.partitions.len() as i32))
            })
            .collect();
        let assignment = assignor.assign(&subscriptions, &counts);
        tracing::info!(?assignment, "computed the group's assignment");
        Ok(assignment
            .into_iter()
            .map(|(member, partitions)| (member, wire::encode_assignment(&partitions)))
            .collect())
    }

    /// Takes a new assignment: revokes what is no longer ours (cooperative), looks up where
    /// new partitions start and hands them to the consumer. True when the member must rejoin
    /// at once (it gave partitions up that another member is waiting for).
    async fn apply(&mut self, assignment: Vec<TopicPartition>) -> Result<bool, Error> {
        let new: BTreeSet<TopicPartition> = assignment.into_iter().collect();
        let revoked: Vec<TopicPartition> = self.owned.difference(&new).cloned().collect();
        let added: Vec<TopicPartition> = new.difference(&self.owned).cloned().collect();
        if !revoked.is_empty() {
            self.revoke(&revoked, false).await;
        }
        self.owned = new;
        if !added.is_empty() {
            self.session.hand_over(&added).await?;
        }
        let cooperative = self.protocol.is_some_and(Assignor::is_cooperative);
        Ok(cooperative && !revoked.is_empty())
    }

    /// Gives partitions up: waits for the consumer to release them (heartbeating meanwhile),
    /// commits their written positions unless they were lost, and forgets them. Lost ones are
    /// not waited for: another member owns them, and nothing of them is committed.
    async fn revoke(&mut self, partitions: &[TopicPartition], lost: bool) {
        let requested = self.session.request_revoke(partitions, lost);
        if let Some(mut done) = requested.filter(|_| !lost) {
            let config = self.session.config.clone();
            let deadline = tokio::time::Instant::now() + config.rebalance_timeout;
            loop {
                tokio::select! {
                    _ = &mut done => break,
                    _ = tokio::time::sleep_until(deadline) => {
                        tracing::warn!(?partitions, "revoked partitions not released in time");
                        break;
                    }
                    _ = tokio::time::sleep(config.heartbeat_interval) => {
                        // The answer is most likely REBALANCE_IN_PROGRESS, which is why we are here.
                        let _ = self.heartbeat_once().await;
                    }
                }
            }
        }
        self.session
            .give_up(&self.identity, &mut self.owned, partitions, lost)
            .await;
    }

    async fn heartbeat_once(&mut self) -> Result<i16, Error> {
        let config = self.session.config.clone();
        let connection = self.session.coordinator().await?;
        let result = group::heartbeat(
            connection,
            &config.group_id,
            self.identity.generation,
            &self.identity.member_id,
            config.instance_id.as_deref(),
        )
        .await
        .map_err(Error::from);
        if result.as_ref().is_err_and(Error::is_connection_failure) {
            self.session.lose_coordinator();
        }
        result
    }

    /// No heartbeat answered for the session timeout: the coordinator has removed this member
    /// and handed its partitions to others. They are lost (not committed), and it joins again.
    async fn expire(&mut self) -> Next {
        tracing::warn!(session_timeout = ?self.session.config.session_timeout,
            "no heartbeat answered for the session timeout; partitions lost, rejoining");
        self.session.lose_coordinator();
        self.identity = Identity::default();
        let all: Vec<TopicPartition> = self.owned.iter().cloned().collect();
        self.revoke(&all, true).await;
        Next::Rejoin
    }

    /// Heartbeats and periodic commits until a rebalance, a close, or the session timeout
    /// without an answered heartbeat.
    async fn heartbeat_phase(&mut self) -> Result<Next, Error> {
        let config = self.session.config.clone();
        let mut heartbeat = tokio::time::interval(config.heartbeat_interval);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut commit = tokio::time::interval(config.commit_interval);
        commit.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        commit.tick().await;
        let patterns = self.session.subscription.has_patterns();
        let fetching = self.session.fetching.clone();
        let mut refresh = tokio::time::interval(fetching.config.metadata_refresh);
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        refresh.tick().await;
        // When the last heartbeat the coordinator answered was sent: the session runs from
        // its arrival, so the member's own expiry comes no later than the coordinator's.
        let mut answered = tokio::time::Instant::now();
        // Joining confirmed the membership.
        self.session.confirm(true);
        loop {
            let expiry = answered + config.session_timeout;
            let code = tokio::select! {
                biased;
                () = tokio::time::sleep_until(expiry) => return Ok(self.expire().await),
                // The patterns match other topics, or a matched one went missing: rejoining
                // tells the group, as a rebalance would.
                _ = refresh.tick(), if patterns => {
                    if !self.refresh_subscription().await {
                        continue;
                    }
                    group_codes::REBALANCE_IN_PROGRESS
                }
                _ = fetching.subscription_wakeup.notified(), if patterns => {
                    if !self.refresh_subscription().await {
                        continue;
                    }
                    group_codes::REBALANCE_IN_PROGRESS
                }
                _ = heartbeat.tick() => match self.beat(expiry, &mut answered).await? {
                    Some(code) => code,
                    None => continue,
                },
                _ = commit.tick() => match self.commit_before(expiry).await {
                    Ok(code) => code,
                    Err(error) => {
                        tracing::warn!(%error, "periodic commit failed; retrying later");
                        continue;
                    }
                },
                command = self.session.commands.recv() => {
                    match self.on_command(command, expiry).await {
                        ControlFlow::Continue(code) => code,
                        ControlFlow::Break(next) => return Ok(next),
                    }
                }
            };
            if let Some(next) = self.on_group_code(code).await? {
                return Ok(next);
            }
        }
    }

    /// Carries out a command from the consumer (or its end, `None`): the group code a commit
    /// met, to act on like a heartbeat's, or the end of the phase on a close.
    async fn on_command(
        &mut self,
        command: Option<Command>,
        expiry: tokio::time::Instant,
    ) -> ControlFlow<Next, i16> {
        match command {
            Some(Command::Commit(reply)) => {
                let result = match self.commit_before(expiry).await {
                    Ok(0) => Ok(()),
                    Ok(code) => Err(self.session.group_error("OffsetCommit", code)),
                    Err(error) => Err(error),
                };
                let code = match &result {
                    Err(Error::Group { code, .. }) => *code,
                    _ => 0,
                };
                let _ = reply.send(result);
                ControlFlow::Continue(code)
            }
            Some(Command::Close(reply)) => {
                let result = self.close().await;
                let _ = reply.send(result);
                ControlFlow::Break(Next::Closed)
            }
            None => {
                let _ = self.close().await;
                ControlFlow::Break(Next::Closed)
            }
        }
    }

    /// Acts on the group code of a heartbeat or commit answer: what ends the phase, if it
    /// does.
    async fn on_group_code(&mut self, code: i16) -> Result<Option<Next>, Error> {
        match code {
            0 => {}
            group_codes::REBALANCE_IN_PROGRESS => {
                // Commit while the generation still counts, so the next owner of any
                // partition that moves starts where this member's output stopped.
                let _ = self.commit_owned(Duration::ZERO).await;
                return Ok(Some(Next::Rejoin));
            }
            group_codes::UNKNOWN_MEMBER_ID | group_codes::ILLEGAL_GENERATION => {
                tracing::warn!(error = %krec_client::error_name(code),
                    "membership expired; partitions lost, rejoining");
                if code == group_codes::UNKNOWN_MEMBER_ID {
                    self.identity.member_id.clear();
                }
                self.identity.generation = -1;
                let all: Vec<TopicPartition> = self.owned.iter().cloned().collect();
                self.revoke(&all, true).await;
                return Ok(Some(Next::Rejoin));
            }
            group_codes::FENCED_INSTANCE_ID => {
                return Err(self.session.group_error("Heartbeat", code));
            }
            code if group_codes::needs_rediscovery(code) => self.session.lose_coordinator(),
            code => tracing::warn!(error = %krec_client::error_name(code), "heartbeat error"),
        }
        Ok(None)
    }

    /// One heartbeat, given up at `expiry` (the expiry then ends the phase): the answer's
    /// code, or None when there is none to act on. An answer that confirms the membership
    /// moves `answered` to when its request was sent.
    async fn beat(
        &mut self,
        expiry: tokio::time::Instant,
        answered: &mut tokio::time::Instant,
    ) -> Result<Option<i16>, Error> {
        let sent = tokio::time::Instant::now();
        let Some(result) = within(Some(expiry), self.heartbeat_once()).await else {
            self.session.lose_coordinator();
            return Ok(None);
        };
        let confirmed = matches!(result, Ok(0 | group_codes::REBALANCE_IN_PROGRESS));
        self.session.confirm(confirmed);
        match result {
            Ok(code) => {
                if confirmed {
                    *answered = sent;
                }
                Ok(Some(code))
            }
            Err(error) if error.is_connection_failure() => Ok(None),
            Err(error @ Error::RetriesExhausted { .. }) => Err(error),
            Err(error) => {
                tracing::warn!(%error, "heartbeat failed");
                Ok(None)
            }
        }
    }

    /// [`Classic::commit_owned`] without retries, given up at `expiry`: a commit after it
    /// would come from a member the coordinator has already removed.
    async fn commit_before(&mut self, expiry: tokio::time::Instant) -> Result<i16, Error> {
        match within(Some(expiry), self.commit_owned(Duration::ZERO)).await {
            Some(result) => result,
            None => {
                self.session.lose_coordinator();
                let code = group_codes::COORDINATOR_NOT_AVAILABLE;
                Err(self.session.group_error("OffsetCommit", code))
            }
        }
    }

    /// Commits every owned partition's written position (retrying for `retry_for` while the
    /// coordinator is away); returns the refusal code (0: none).
    async fn commit_owned(&mut self, retry_for: Duration) -> Result<i16, Error> {
        let owned = self.owned.clone();
        Ok(
            match self
                .session
                .commit(&self.identity, &owned, retry_for)
                .await?
            {
                CommitOutcome::Done => 0,
                CommitOutcome::Refused(code) => code,
            },
        )
    }

    /// Final commit, then LeaveGroup (dynamic members only: a static member's partitions wait
    /// for it until its session times out, so a restart gets them back without a rebalance).
    async fn close(&mut self) -> Result<(), Error> {
        let committed = self.commit_owned(FINAL_COMMIT_RETRY).await;
        let config = self.session.config.clone();
        if config.instance_id.is_none() && !self.identity.member_id.is_empty() {
            let mut left = Ok(group_codes::NOT_COORDINATOR);
            // A coordinator that moved gets one more try, at its new place.
            for _ in 0..2 {
                left = match self.session.coordinator().await {
                    Ok(connection) => {
                        let member = &self.identity.member_id;
                        group::leave_group(connection, &config.group_id, member, None)
                            .await
                            .map_err(Error::from)
                    }
                    Err(error) => Err(error),
                };
                match &left {
                    Ok(code) if group_codes::needs_rediscovery(*code) => {
                        self.session.lose_coordinator()
                    }
                    Err(error) if error.is_connection_failure() => self.session.lose_coordinator(),
                    _ => break,
                }
            }
            match left {
                Ok(0) => tracing::info!("left the group"),
                Ok(code) => {
                    tracing::warn!(error = %krec_client::error_name(code), "LeaveGroup refused")
                }
                Err(error) => tracing::warn!(%error, "LeaveGroup failed"),
            }
        }
        match committed? {
            0 => Ok(()),
            code if group_codes::is_membership_change(code) => {
                tracing::warn!(error = %krec_client::error_name(code),
                    "final commit refused: the partitions' next owner starts at the last commit");
                Ok(())
            }
            code => Err(self.session.group_error("OffsetCommit", code)),
        }
    }
}
