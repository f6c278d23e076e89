//! What both group protocols share: the coordinator connection (found again when it moves),
//! committed-offset lookups for new partitions, commits of written offsets, and the revoke
//! handshake with the consumer handle.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex};

use super::assignor::TopicPartition;
use super::written::WrittenOffsets;
use super::{Command, GroupConfig, MemberEvent};
use crate::config::{OffsetReset, StartOffset};
use crate::metrics::{CommitResult, ErrorKind, Metrics};
use crate::shared::{Backoff, Shared};
use crate::subscription::TopicSubscription;
use crate::Error;
use krec_client::group::{self, group_codes, Committer};
use krec_client::metadata::MetadataClient;
use krec_client::{error_name, Connection, ConnectionSettings};

/// How long a commit before giving partitions up (revoke, close) keeps retrying while the
/// coordinator is away; periodic commits do not retry (the next period does).
pub const FINAL_COMMIT_RETRY: Duration = Duration::from_secs(5);

/// Runs `work` until `deadline` (none: to its end); `None` if the deadline came first. What
/// was cut off may have left the coordinator connection mid-request: drop it then.
pub async fn within<F: std::future::Future>(
    deadline: Option<tokio::time::Instant>,
    work: F,
) -> Option<F::Output> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, work).await.ok(),
        None => Some(work.await),
    }
}

/// The member's identity for commits: generation (classic) or epoch (KIP-848).
#[derive(Clone, Debug, Default)]
pub struct Identity {
    /// Member id.
    pub member_id: String,
    /// Generation id or member epoch (-1: none).
    pub generation: i32,
}

/// State and links of a membership task.
#[derive(Debug)]
pub struct Session {
    pub config: Arc<GroupConfig>,
    pub settings: ConnectionSettings,
    pub bootstrap: Vec<String>,
    pub reset: OffsetReset,
    pub metadata: Arc<AsyncMutex<MetadataClient>>,
    pub written: Arc<WrittenOffsets>,
    pub events: mpsc::UnboundedSender<MemberEvent>,
    pub commands: mpsc::UnboundedReceiver<Command>,
    pub backoff: (Duration, Duration),
    pub give_up_after: Duration,
    /// The group's topics, names and patterns (parsed from [`GroupConfig::topics`]).
    pub subscription: TopicSubscription,
    /// The fetching side's state: which topics only a pattern matched.
    pub fetching: Arc<Shared>,
    coordinator: Option<Connection>,
    committed: HashMap<TopicPartition, i64>,
    /// Whether a heartbeat has confirmed the membership since the last one that failed.
    confirmed: bool,
    /// The consumer's counters: coordinator faults, commits, rebalances.
    pub metrics: Arc<Metrics>,
    /// The member's identity as the handle reads it (`GroupConsumer::group_metadata`).
    pub published: super::metadata::PublishedIdentity,
    /// False for a member that only holds its partitions (`GroupConsumer::membership`): it
    /// looks up no committed offsets and commits none; its owner commits them elsewhere.
    pub reads: bool,
}

/// How a commit went.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Everything asked for is committed.
    Done,
    /// The coordinator refused with this group error code (rebalance, generation, member).
    Refused(i16),
}

impl Session {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: Arc<GroupConfig>,
        consumer: &crate::ConsumerConfig,
        metadata: Arc<AsyncMutex<MetadataClient>>,
        written: Arc<WrittenOffsets>,
        events: mpsc::UnboundedSender<MemberEvent>,
        commands: mpsc::UnboundedReceiver<Command>,
        subscription: TopicSubscription,
        fetching: Arc<Shared>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            config,
            settings: consumer.connection.clone(),
            bootstrap: consumer.bootstrap.clone(),
            reset: consumer.offset_reset,
            metadata,
            written,
            events,
            commands,
            backoff: (consumer.backoff, consumer.max_backoff),
            give_up_after: consumer.give_up_after,
            subscription,
            fetching,
            coordinator: None,
            committed: HashMap::new(),
            confirmed: true,
            metrics,
            published: Default::default(),
            reads: true,
        }
    }

    /// Tells the consumer handle of newly assigned partitions: with where each starts for a
    /// member that reads them, as they are for one that only holds them.
    pub async fn hand_over(&mut self, added: &[TopicPartition]) -> Result<(), Error> {
        let event = if self.reads {
            MemberEvent::Assigned(self.starts(added).await?)
        } else {
            MemberEvent::Held(added.to_vec())
        };
        let _ = self.events.send(event);
        Ok(())
    }

    /// Tells the fetching side which of `topics` only a pattern matched: when one of those
    /// disappears from the metadata it was deleted, and the next assignment drops it.
    pub fn set_matched_topics<'a>(&self, topics: impl IntoIterator<Item = &'a str>) {
        let matched = topics
            .into_iter()
            .filter(|t| !self.subscription.is_named(t))
            .map(Arc::from)
            .collect();
        self.fetching.state().matched_topics = matched;
    }

    /// A group error with this session's context.
    pub fn group_error(&self, api: &'static str, code: i16) -> Error {
        Error::Group {
            group: self.config.group_id.clone(),
            broker: self
                .coordinator
                .as_ref()
                .map(|c| c.address().to_owned())
                .unwrap_or_default(),
            api,
            code,
            name: error_name(code),
        }
    }

    /// Tells the consumer handle whether the membership stands confirmed. From a lost
    /// coordinator or a refused heartbeat until a heartbeat is answered, the member may be
    /// fenced already: records it wrote then could not be committed and the next owner would
    /// write them again, so the handle holds them back.
    pub fn confirm(&mut self, confirmed: bool) {
        if self.confirmed == confirmed {
            return;
        }
        self.confirmed = confirmed;
        if confirmed {
            tracing::info!("heartbeat answered; handing records out again");
        } else {
            tracing::warn!(
                "membership unconfirmed; holding records back until a heartbeat is answered"
            );
        }
        let _ = self.events.send(MemberEvent::Confirmed(confirmed));
    }

    /// Drops the coordinator connection so the next use finds the coordinator again; until a
    /// heartbeat is answered there, the membership is unconfirmed.
    pub fn lose_coordinator(&mut self) {
        self.coordinator = None;
        self.confirm(false);
    }

    /// The coordinator connection, found (FindCoordinator) and opened when needed, retried
    /// with backoff until the consumer's give-up time.
    pub async fn coordinator(&mut self) -> Result<&mut Connection, Error> {
        if self.coordinator.is_none() {
            let mut backoff = Backoff::new(self.backoff.0, self.backoff.1);
            let started = Instant::now();
            let mut attempts = 0u32;
            loop {
                attempts += 1;
                match self.find_coordinator().await {
                    Ok(connection) => {
                        self.metrics.group_failing.set(None);
                        tracing::info!(group = %self.config.group_id,
                            coordinator = connection.address(), "group coordinator found");
                        self.coordinator = Some(connection);
                        break;
                    }
                    Err(error) if error.is_security_failure() => return Err(error),
                    Err(error) => {
                        if self.coordinator_failed(started) > self.give_up_after {
                            return Err(Error::RetriesExhausted {
                                what: format!(
                                    "finding the coordinator of group {}",
                                    self.config.group_id
                                ),
                                attempts,
                                last: Box::new(error),
                            });
                        }
                        tracing::warn!(%error, "group coordinator lookup failed; retrying");
                        tokio::time::sleep(backoff.next_delay()).await;
                    }
                }
            }
        }
        self.coordinator.as_mut().ok_or(Error::Stopped)
    }

    /// Counts a failed coordinator search that began at `started`; how long it has lasted.
    fn coordinator_failed(&self, started: Instant) -> Duration {
        self.metrics.error(ErrorKind::Group);
        self.metrics.group_failing.set(Some(started));
        started.elapsed()
    }

    async fn find_coordinator(&mut self) -> Result<Connection, Error> {
        let mut candidates: Vec<String> = {
            let mut metadata = self.metadata.lock().await;
            match metadata.fetch(&[]).await {
                Ok(cluster) => {
                    let mut brokers: Vec<String> = cluster.brokers.values().cloned().collect();
                    brokers.sort();
                    brokers
                }
                Err(_) => Vec::new(),
            }
        };
        for address in &self.bootstrap {
            if !candidates.contains(address) {
                candidates.push(address.clone());
            }
        }
        coordinator_among(&candidates, &self.config.group_id, &self.settings).await
    }

    /// Where each newly assigned partition starts: its committed offset, or the reset policy
    /// when the group has none. Starts tracking their written positions.
    pub async fn starts(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, StartOffset)>, Error> {
        let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for TopicPartition { topic, partition } in partitions {
            by_topic
                .entry(topic.to_string())
                .or_default()
                .push(*partition);
        }
        let mut backoff = Backoff::new(self.backoff.0, self.backoff.1);
        let started = Instant::now();
        let answers = loop {
            let group_id = self.config.group_id.clone();
            let result = async {
                let connection = self.coordinator().await?;
                Ok::<_, Error>(group::offset_fetch(connection, &group_id, &by_topic).await?)
            }
            .await;
            let retry = match result {
                Ok((0, answers)) => {
                    let unstable = answers
                        .values()
                        .any(|a| a.error_code == group_codes::UNSTABLE_OFFSET_COMMIT);
                    if !unstable {
                        break answers;
                    }
                    None
                }
                Ok((code, _)) if group_codes::needs_rediscovery(code) => {
                    self.lose_coordinator();
                    Some(self.group_error("OffsetFetch", code))
                }
                Ok((code, _)) => return Err(self.group_error("OffsetFetch", code)),
                Err(error) if error.is_connection_failure() => {
                    self.lose_coordinator();
                    Some(error)
                }
                Err(error) => return Err(error),
            };
            if started.elapsed() > self.give_up_after {
                return Err(retry.unwrap_or_else(|| self.group_error("OffsetFetch", 88)));
            }
            tokio::time::sleep(backoff.next_delay()).await;
        };
        let reset = self.config.start_without_commit;
        let mut starts = Vec::with_capacity(partitions.len());
        for key in partitions {
            let (topic, partition) = (&key.topic, &key.partition);
            let committed = answers
                .get(key)
                .filter(|a| a.error_code == 0)
                .map(|a| a.offset);
            let start = match committed {
                Some(offset) if offset >= 0 => {
                    self.committed.insert(key.clone(), offset);
                    self.written.track(topic, *partition, Some(offset));
                    StartOffset::Offset(offset)
                }
                _ => {
                    if self.reset == OffsetReset::Fail {
                        return Err(Error::InvalidArgument {
                            what: "offset",
                            detail: format!(
                                "group {} has no committed offset for {topic}/{partition} and the reset policy is fail",
                                self.config.group_id
                            ),
                        });
                    }
                    self.written.track(topic, *partition, None);
                    reset
                }
            };
            tracing::debug!(%topic, partition, ?start, "assigned partition starts");
            starts.push((key.clone(), start));
        }
        Ok(starts)
    }

    /// Like [`Session::commit_once`], retrying for up to `retry_for` while the coordinator
    /// is unreachable or has moved (a broker restarting answers NOT_COORDINATOR for a while).
    pub async fn commit(
        &mut self,
        identity: &Identity,
        partitions: &BTreeSet<TopicPartition>,
        retry_for: Duration,
    ) -> Result<CommitOutcome, Error> {
        let started = Instant::now();
        let mut backoff = Backoff::new(self.backoff.0, self.backoff.1);
        loop {
            let outcome = self.commit_once(identity, partitions).await;
            let retriable = match &outcome {
                Ok(CommitOutcome::Refused(code)) => group_codes::needs_rediscovery(*code),
                Err(error) => error.is_connection_failure(),
                _ => false,
            };
            if !retriable || started.elapsed() >= retry_for {
                return outcome;
            }
            tokio::time::sleep(backoff.next_delay()).await;
        }
    }

    /// Commits the written positions of `partitions` that moved since their last commit, in
    /// one OffsetCommit. Connection failures are returned (the positions stay pending).
    pub async fn commit_once(
        &mut self,
        identity: &Identity,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Result<CommitOutcome, Error> {
        if !self.reads {
            // The positions of a member that reads nothing are its owner's to commit.
            return Ok(CommitOutcome::Done);
        }
        let offsets: BTreeMap<TopicPartition, i64> = self
            .written
            .snapshot(partitions)
            .into_iter()
            .filter(|(key, offset)| self.committed.get(key).is_none_or(|c| c < offset))
            .collect();
        if offsets.is_empty() {
            return Ok(CommitOutcome::Done);
        }
        let group_id = self.config.group_id.clone();
        let instance_id = self.config.instance_id.clone();
        let committer = Committer {
            group: &group_id,
            generation: identity.generation,
            member_id: &identity.member_id,
            instance_id: instance_id.as_deref(),
        };
        let result = async {
            let connection = self.coordinator().await?;
            Ok::<_, Error>(group::offset_commit(connection, &committer, &offsets).await?)
        }
        .await;
        let answers = match result {
            Ok(answers) => answers,
            Err(error) => {
                self.metrics.committed(CommitResult::Failed);
                if error.is_connection_failure() {
                    self.lose_coordinator();
                }
                return Err(error);
            }
        };
        let mut refused = None;
        for (key, code) in answers {
            if code == 0 {
                if let Some(&offset) = offsets.get(&key) {
                    // Parsed by the broker tests: the exact commit history of a member.
                    tracing::info!(target: "krec::commit", group = %group_id, topic = %key.topic,
                        partition = key.partition, offset, "committed");
                    self.committed.insert(key, offset);
                }
            } else {
                if group_codes::needs_rediscovery(code) {
                    self.lose_coordinator();
                }
                tracing::debug!(topic = %key.topic, partition = key.partition, error = %error_name(code), "commit refused");
                refused.get_or_insert(code);
            }
        }
        let counted = refused.map_or(CommitResult::Ok, |_| CommitResult::Refused);
        self.metrics.committed(counted);
        Ok(refused.map_or(CommitOutcome::Done, CommitOutcome::Refused))
    }

    /// Gives revoked `partitions` up: commits what was written of them unless they were `lost`
    /// (another member may own them already), then removes them from `owned` and forgets them.
    /// A failed commit is only logged: the next owner starts at the last commit.
    pub async fn give_up(
        &mut self,
        identity: &Identity,
        owned: &mut BTreeSet<TopicPartition>,
        partitions: &[TopicPartition],
        lost: bool,
    ) {
        if !lost && !partitions.is_empty() {
            let set: BTreeSet<TopicPartition> = partitions.iter().cloned().collect();
            match self.commit(identity, &set, FINAL_COMMIT_RETRY).await {
                Ok(CommitOutcome::Done) => {}
                Ok(CommitOutcome::Refused(code)) => tracing::warn!(error = %error_name(code),
                    "commit of revoked partitions refused; the next owner starts at the last commit"),
                Err(error) => tracing::warn!(%error, "commit of revoked partitions failed"),
            }
        }
        for partition in partitions {
            owned.remove(partition);
        }
        self.forget(partitions);
    }

    /// Forgets revoked partitions (their written and committed positions).
    pub fn forget(&mut self, partitions: &[TopicPartition]) {
        self.written.forget(partitions);
        for key in partitions {
            self.committed.remove(key);
        }
    }

    /// Asks the consumer handle to give partitions up; the receiver completes once it has
    /// (everything it handed out for them written).
    pub fn request_revoke(
        &self,
        partitions: &[TopicPartition],
        lost: bool,
    ) -> Option<oneshot::Receiver<()>> {
        if partitions.is_empty() {
            return None;
        }
        let (ack, done) = oneshot::channel();
        let event = MemberEvent::Revoke {
            partitions: partitions.to_vec(),
            lost,
            ack,
        };
        self.events.send(event).ok()?;
        Some(done)
    }
}

/// A connection to `group`'s coordinator, asked of each candidate broker in turn; a security
/// failure ends the search at once (every broker would refuse the same way).
pub(crate) async fn coordinator_among(
    candidates: &[String],
    group: &str,
    settings: &ConnectionSettings,
) -> Result<Connection, Error> {
    let mut last = None;
    for address in candidates {
        let attempt = async {
            let mut connection = Connection::connect(address, settings).await?;
            match group::find_coordinator(&mut connection, group).await? {
                Ok((_, coordinator)) if coordinator == *address => Ok(connection),
                Ok((_, coordinator)) => Ok(Connection::connect(&coordinator, settings).await?),
                Err(code) => Err(Error::Group {
                    group: group.to_owned(),
                    broker: address.clone(),
                    api: "FindCoordinator",
                    code,
                    name: error_name(code),
                }),
            }
        };
        match attempt.await {
            Ok(connection) => return Ok(connection),
            Err(error) if error.is_security_failure() => return Err(error),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or(Error::InvalidArgument {
        what: "brokers",
        detail: "the bootstrap list is empty".to_owned(),
    }))
}

#[cfg(test)]
mod tests;
