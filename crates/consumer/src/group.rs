//! Consumer groups: the coordinator spreads the partitions of the subscribed topics over the
//! members; each member fetches its share and commits what it has written out.
//!
//! Layout:
//! - `assignor`: range, round-robin and cooperative-sticky, as pure functions.
//! - `wire`: the subscription and assignment bytes of the classic protocol.
//! - `classic`: the classic protocol task (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
//! - `kip848`: the consumer protocol task of KIP-848 (ConsumerGroupHeartbeat).
//! - `session`: what both share: the coordinator connection, offset lookups and commits.
//! - `membership`: [`GroupConsumer::membership`], a member that holds partitions but reads
//!   none (no fetch, no offset lookup, no commit), for programs that commit on their own.
//! - `written`: the processed positions, the only offsets ever committed.
//! - `ownership`: whether a chunk handed out earlier still belongs to the member.
//! - [`GroupProgress`]: how the member marks chunks processed (`written`) and asks whether
//!   one is still its own (`ownership`), from any task or thread.
//!
//! The membership task runs on its own, so heartbeats go out however slow the output is. It
//! talks to [`GroupConsumer`] through events: partitions assigned (with their committed
//! offsets), partitions to revoke (acknowledged once everything handed out for them has been
//! written, then committed), partitions lost (given up at once, never committed). A member
//! loses its partitions when the coordinator says it was fenced, and also on its own once no
//! heartbeat has been answered for [`GroupConfig::session_timeout`]: by then the coordinator
//! has given them to another member, so writing on would only repeat records. Commits also
//! happen every [`GroupConfig::commit_interval`] and on [`GroupConsumer::close`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), krec_consumer::Error> {
//! use krec_consumer::{ConsumerConfig, GroupConsumer, GroupEvent};
//! let mut config = ConsumerConfig::new(vec!["127.0.0.1:9092".into()]);
//! config.group.group_id = "my-group".to_owned();
//! let mut group = GroupConsumer::subscribe(config, &["events"]).await?;
//! let progress = group.progress(); // clone it into other tasks or threads as needed
//! while let Some(event) = group.next_event().await? {
//!     if let GroupEvent::Chunk(chunk) = event {
//!         chunk.for_each_record(|record| println!("{}", record.offset()))?;
//!         progress.processed(&chunk);
//!     }
//! }
//! group.close().await
//! # }
//! ```

mod assignor;
mod classic;
mod config;
mod kip848;
mod membership;
mod metadata;
mod ownership;
mod progress;
pub(crate) mod session;
mod wire;
mod written;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex};
use tokio::task::JoinHandle;

pub use assignor::Assignor;
pub use config::{GroupConfig, GroupProtocol, NoListener, RebalanceListener};
pub use metadata::GroupMetadata;
use ownership::Ownership;
pub use progress::GroupProgress;
use written::WrittenOffsets;

use super::{Consumer, ConsumerConfig, Fetched, MetricsSnapshot, MetricsSource, StartOffset};
use crate::subscription::TopicSubscription;
use crate::Error;
use crate::PartitionChunk;
use crate::TopicPartition;
use krec_client::metadata::MetadataClient;

/// From the membership task to the consumer handle.
#[derive(Debug)]
pub(crate) enum MemberEvent {
    /// Partitions added, with where each starts.
    Assigned(Vec<(TopicPartition, StartOffset)>),
    /// Partitions added to a member that only holds them ([`GroupConsumer::membership`]).
    Held(Vec<TopicPartition>),
    /// Partitions to give up; `ack` once everything handed out for them is written.
    Revoke {
        partitions: Vec<TopicPartition>,
        lost: bool,
        ack: oneshot::Sender<()>,
    },
    /// Whether a heartbeat has confirmed the membership since the last one that failed.
    Confirmed(bool),
    /// The membership failed for good.
    Failed(Error),
}

/// From the consumer handle to the membership task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Commit the written positions now.
    Commit(oneshot::Sender<Result<(), Error>>),
    /// Commit, leave the group and stop.
    Close(oneshot::Sender<Result<(), Error>>),
}

/// What [`GroupConsumer::next_event`] hands out.
#[derive(Debug)]
#[non_exhaustive]
pub enum GroupEvent {
    /// Records of an assigned partition. Once they are handled, pass the chunk to
    /// [`GroupProgress::processed`]: only processed offsets are committed.
    Chunk(PartitionChunk),
    /// Partitions newly assigned to this member; they start at the group's committed offsets
    /// (a member that only holds them, [`GroupConsumer::membership`], reads none).
    Assigned(Vec<TopicPartition>),
    /// Partitions given up in a rebalance. No chunk of theirs follows; what was processed of
    /// them is committed before the next owner starts (a member that only holds them releases
    /// them when [`GroupConsumer::next_event`] is next called).
    Revoked(Vec<TopicPartition>),
    /// Partitions lost without a chance to commit: the coordinator fenced the member, or no
    /// heartbeat was answered for the session timeout. Another member may be reading them
    /// already: nothing of them is committed, no chunk of theirs follows, and chunks handed
    /// out before should be dropped rather than written ([`GroupProgress::owns`]).
    Lost(Vec<TopicPartition>),
}

/// A revocation waiting for the written positions to catch up.
#[derive(Debug)]
struct PendingRevoke {
    partitions: Vec<TopicPartition>,
    ack: oneshot::Sender<()>,
    deadline: tokio::time::Instant,
}

/// A member of a consumer group: fetches the partitions the group assigns it.
///
/// Hand every chunk's records to the output, then mark the chunk processed through
/// [`GroupConsumer::progress`] (from this task or any other thread): only processed offsets
/// are committed.
pub struct GroupConsumer {
    consumer: Option<Consumer>,
    /// The consumer after [`GroupConsumer::stop_fetching`], ending its fetch sessions.
    stopped: Option<Consumer>,
    events: mpsc::UnboundedReceiver<MemberEvent>,
    commands: mpsc::UnboundedSender<Command>,
    written: Arc<WrittenOffsets>,
    ownership: Ownership,
    handed_out: HashMap<TopicPartition, i64>,
    assigned: BTreeSet<TopicPartition>,
    /// Assignment changes not yet handed out by [`GroupConsumer::next_event`].
    changes: VecDeque<GroupEvent>,
    listener: Box<dyn RebalanceListener>,
    pending_revoke: Option<PendingRevoke>,
    revoke_limit: Duration,
    task: JoinHandle<()>,
    failed: bool,
    /// False from a failed heartbeat until one is answered: records fetched meanwhile are held
    /// back, since the member may already be fenced and could not commit them.
    confirmed: bool,
    metrics: MetricsSource,
    group: Arc<GroupConfig>,
    published: metadata::PublishedIdentity,
    /// False for a member that only holds its partitions ([`GroupConsumer::membership`]).
    reads: bool,
}

impl std::fmt::Debug for GroupConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupConsumer")
            .field("assigned", &self.assigned)
            .finish_non_exhaustive()
    }
}

impl GroupConsumer {
    /// Joins the group [`ConsumerConfig::group`] describes (its `group_id`, `topics` and the
    /// rest), telling `listener` of assignment changes. Connects, starts the membership task
    /// and returns at once; partitions arrive as the group assigns them. Must be called inside
    /// a tokio runtime.
    pub async fn join(
        config: ConsumerConfig,
        listener: impl RebalanceListener + 'static,
    ) -> Result<Self, Error> {
        Self::start(config, Box::new(listener), true).await
    }

    /// [`GroupConsumer::join`], for a member that fetches its partitions (`reads`) or only
    /// holds them.
    async fn start(
        config: ConsumerConfig,
        listener: Box<dyn RebalanceListener>,
        reads: bool,
    ) -> Result<Self, Error> {
        let group = config.group.clone();
        let subscription = checked_subscription(&group)?;
        let consumer = Consumer::connect(config.clone()).await?;
        // Named topics that do not exist are an error up front, as for `krec consume -t`.
        for topic in subscription.names() {
            consumer.partitions(topic).await?;
        }
        let metadata = Arc::new(AsyncMutex::new(MetadataClient::new(
            config.bootstrap.clone(),
            config.connection.clone(),
        )));
        let written = Arc::new(WrittenOffsets::default());
        let metrics = consumer.metrics_source();
        metrics.shared.metrics.joined_group();
        let (event_sender, events) = mpsc::unbounded_channel();
        let (commands, command_receiver) = mpsc::unbounded_channel();
        let revoke_limit = group.rebalance_timeout;
        let protocol = group.protocol;
        let group = Arc::new(group);
        let mut session = session::Session::new(
            group.clone(),
            &config,
            metadata,
            written.clone(),
            event_sender,
            command_receiver,
            subscription,
            consumer.shared.clone(),
            metrics.shared.metrics.clone(),
        );
        session.reads = reads;
        let published = session.published.clone();
        let task = match protocol {
            GroupProtocol::Classic => tokio::spawn(classic::run(session)),
            GroupProtocol::Consumer => tokio::spawn(kip848::run(session)),
        };
        Ok(Self {
            consumer: Some(consumer),
            stopped: None,
            events,
            commands,
            written,
            ownership: Ownership::default(),
            handed_out: HashMap::new(),
            assigned: BTreeSet::new(),
            changes: VecDeque::new(),
            listener,
            pending_revoke: None,
            revoke_limit,
            task,
            failed: false,
            confirmed: true,
            metrics,
            group,
            published,
            reads,
        })
    }

    /// Joins the group `config.group` names (`group.id` and the other group properties) as a
    /// member subscribed to `topics`: names, and regular expressions starting with `^`.
    /// Returns at once; partitions arrive as the group assigns them, through
    /// [`GroupConsumer::next_event`]. Must be called inside a tokio runtime.
    pub async fn subscribe(mut config: ConsumerConfig, topics: &[&str]) -> Result<Self, Error> {
        config.group.topics = topics.iter().map(|topic| (*topic).to_owned()).collect();
        Self::join(config, NoListener).await
    }

    /// The next chunk of an assigned partition, or assignment change, in the order they
    /// happen; `None` after [`GroupConsumer::stop_fetching`] once everything fetched before
    /// was handed out, or under [`GroupConsumer::stop_at_end`] once every assigned partition
    /// is at its end. Errors are final. Cancel-safe.
    pub async fn next_event(&mut self) -> Result<Option<GroupEvent>, Error> {
        loop {
            if let Some(change) = self.changes.pop_front() {
                return Ok(Some(change));
            }
            if self.consumer.as_mut().is_some_and(Consumer::all_at_end) {
                return Ok(None);
            }
            if self.consumer.is_none() && !self.failed {
                return Ok(self.stopped_chunk().map(GroupEvent::Chunk));
            }
            if let Some(Fetched::Chunk(chunk)) = self.poll_once().await? {
                return Ok(Some(GroupEvent::Chunk(chunk)));
            }
        }
    }

    /// Once on, [`GroupConsumer::next_event`] gives `None` when every partition assigned now
    /// has reached the end it had when the fetch that got there was answered. A partition that
    /// fetches more after its end must reach it again, revoked partitions no longer count, and
    /// nothing assigned (yet) is not the end.
    pub fn stop_at_end(&mut self, stop: bool) {
        if let Some(consumer) = self.consumer.as_mut() {
            consumer.stop_at_end_as_member(stop);
        }
    }

    /// Marks `chunk`'s records as processed: its partition is committable up to the chunk's
    /// end. The same as [`GroupProgress::processed`] on [`GroupConsumer::progress`], for the
    /// task that polls.
    pub fn processed(&self, chunk: &PartitionChunk) {
        self.progress().processed(chunk);
    }

    /// Where to mark chunks processed (the only offsets committed) and ask whether one is
    /// still this member's: a handle for this task or any other thread.
    pub fn progress(&self) -> GroupProgress {
        GroupProgress::new(self.written.clone(), self.ownership.clone())
    }

    /// The partitions assigned now.
    pub fn assignment(&self) -> &BTreeSet<TopicPartition> {
        &self.assigned
    }

    /// The member's counters and positions now (group counters included).
    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics.snapshot()
    }

    /// A handle that takes [`GroupConsumer::metrics`] snapshots from another task or thread.
    pub fn metrics_source(&self) -> MetricsSource {
        self.metrics.clone()
    }

    /// Where every assigned partition's fetching stands.
    pub fn positions(&self) -> Vec<super::PartitionPosition> {
        self.consumer
            .as_ref()
            .map(Consumer::positions)
            .unwrap_or_default()
    }

    /// The next chunk (or end-of-partition notice) of an assigned partition. Assignment
    /// changes are applied here, calling the listener. Cancel-safe.
    pub async fn poll(&mut self) -> Result<Fetched, Error> {
        if !self.reads {
            return Err(Error::InvalidArgument {
                what: "poll",
                detail: "a member that only holds its partitions fetches nothing; \
                         its assignment changes come from next_event"
                    .to_owned(),
            });
        }
        loop {
            if let Some(fetched) = self.poll_once().await? {
                return Ok(fetched);
            }
        }
    }

    /// One step of [`GroupConsumer::poll`]: something fetched, or `None` after applying an
    /// assignment change.
    async fn poll_once(&mut self) -> Result<Option<Fetched>, Error> {
        if self.failed {
            return Err(Error::Stopped);
        }
        self.finish_revoke().await;
        let Some(consumer) = self.consumer.as_mut() else {
            return Err(Error::Stopped);
        };
        tokio::select! {
            biased;
            event = self.events.recv() => match event {
                Some(event) => self.apply(event).map(|()| None),
                None => {
                    self.failed = true;
                    Err(Error::Stopped)
                }
            },
            fetched = consumer.poll(), if self.confirmed && self.reads => {
                let fetched = fetched?;
                if let Fetched::Chunk(chunk) = &fetched {
                    let key = TopicPartition::new(chunk.topic_arc().clone(), chunk.partition());
                    self.handed_out.insert(key, chunk.next_offset());
                }
                Ok(Some(fetched))
            }
        }
    }

    /// After [`GroupConsumer::stop_fetching`]: a chunk fetched before, if one is left.
    fn stopped_chunk(&mut self) -> Option<PartitionChunk> {
        let consumer = self.stopped.as_mut()?;
        loop {
            match consumer.poll_fetched().ok()?? {
                Fetched::Chunk(chunk) => return Some(chunk),
                _ => continue,
            }
        }
    }

    fn apply(&mut self, event: MemberEvent) -> Result<(), Error> {
        match event {
            MemberEvent::Assigned(starts) => {
                let partitions: Vec<TopicPartition> =
                    starts.iter().map(|(key, _)| key.clone()).collect();
                if let Some(consumer) = self.consumer.as_mut() {
                    consumer.assign_unchecked(starts);
                }
                self.take(partitions);
            }
            MemberEvent::Held(partitions) => self.take(partitions),
            MemberEvent::Revoke {
                partitions,
                lost,
                ack,
            } => {
                tracing::info!(partitions = %render(&partitions), lost, "partitions revoked");
                if lost {
                    self.ownership.lose(self.generations(&partitions));
                }
                if let Some(consumer) = self.consumer.as_mut() {
                    consumer.unassign(&partitions);
                }
                for partition in &partitions {
                    self.assigned.remove(partition);
                }
                self.metrics.shared.metrics.assigned(self.assigned.len());
                if lost {
                    // Another member owns them now: nothing to wait for, nothing to commit.
                    for partition in &partitions {
                        self.handed_out.remove(partition);
                    }
                    self.listener.on_lost(&partitions);
                    self.changes.push_back(GroupEvent::Lost(partitions));
                    let _ = ack.send(());
                } else {
                    self.listener.on_revoked(&partitions);
                    self.changes
                        .push_back(GroupEvent::Revoked(partitions.clone()));
                    self.pending_revoke = Some(PendingRevoke {
                        partitions,
                        ack,
                        deadline: tokio::time::Instant::now() + self.revoke_limit,
                    });
                }
            }
            MemberEvent::Confirmed(confirmed) => self.confirmed = confirmed,
            MemberEvent::Failed(error) => {
                self.metrics.shared.metrics.stopped_on_error();
                self.failed = true;
                return Err(error);
            }
        }
        Ok(())
    }

    /// Adds newly assigned partitions to the assignment and tells the listener and the caller.
    fn take(&mut self, partitions: Vec<TopicPartition>) {
        tracing::info!(partitions = %render(&partitions), "partitions assigned");
        self.assigned.extend(partitions.iter().cloned());
        self.metrics.shared.metrics.assigned(self.assigned.len());
        self.listener.on_assigned(&partitions);
        self.changes.push_back(GroupEvent::Assigned(partitions));
    }

    /// The cursor generation each of `partitions` is read under now.
    fn generations(&self, partitions: &[TopicPartition]) -> Vec<(TopicPartition, u64)> {
        let state = self.metrics.shared.state();
        partitions
            .iter()
            .filter_map(|key| {
                let cursor = state.cursors.get(&(key.topic.clone(), key.partition))?;
                Some((key.clone(), cursor.generation))
            })
            .collect()
    }

    /// Waits until everything handed out for the partitions being revoked is marked processed
    /// (or the rebalance timeout passes), then lets the membership task commit and go on.
    async fn finish_revoke(&mut self) {
        loop {
            let Some(pending) = self.pending_revoke.as_ref() else {
                return;
            };
            let caught_up = pending
                .partitions
                .iter()
                .all(|key| match self.handed_out.get(key) {
                    None => true,
                    // Handed out and nothing marked yet is not caught up: committing then would
                    // let the next owner start over what is still being written.
                    Some(&handed) => self
                        .written
                        .get(&key.topic, key.partition)
                        .is_some_and(|written| written >= handed),
                });
            if caught_up || tokio::time::Instant::now() >= pending.deadline {
                if !caught_up {
                    tracing::warn!(partitions = ?pending.partitions,
                        "revoked partitions not all written out in time; committing what was");
                }
                if let Some(pending) = self.pending_revoke.take() {
                    for key in &pending.partitions {
                        self.handed_out.remove(key);
                    }
                    let _ = pending.ack.send(());
                }
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Commits the processed positions now.
    pub async fn commit(&mut self) -> Result<(), Error> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Commit(reply))
            .map_err(|_| Error::Stopped)?;
        answer.await.map_err(|_| Error::Stopped)?
    }

    /// Stops fetching (data already handed out can still be written and marked processed).
    pub fn stop_fetching(&mut self) {
        if let Some(mut consumer) = self.consumer.take() {
            consumer.stop_fetching();
            self.stopped = Some(consumer);
        }
    }

    /// Stops fetching, commits the processed positions and leaves the group (a static member
    /// stays in it, as the Java client does, so that its restart gets its partitions back).
    pub async fn close(mut self) -> Result<(), Error> {
        self.stop_fetching();
        if let Some(consumer) = self.stopped.take() {
            consumer.close().await;
        }
        let (reply, mut answer) = oneshot::channel();
        if self.commands.send(Command::Close(reply)).is_err() {
            return Err(Error::Stopped);
        }
        let limit = tokio::time::sleep(self.revoke_limit + Duration::from_secs(30));
        tokio::pin!(limit);
        loop {
            tokio::select! {
                biased;
                result = &mut answer => return result.map_err(|_| Error::Stopped)?,
                event = self.events.recv() => match event {
                    // Fetching has stopped: everything handed out is written by now.
                    Some(MemberEvent::Revoke { ack, .. }) => { let _ = ack.send(()); }
                    Some(MemberEvent::Failed(error)) => return Err(error),
                    Some(
                        MemberEvent::Assigned(_) | MemberEvent::Held(_) | MemberEvent::Confirmed(_),
                    ) => {}
                    // The task has ended: its answer is already sent, or it never will be.
                    None => return (&mut answer).await.map_err(|_| Error::Stopped)?,
                },
                _ = &mut limit => {
                    self.task.abort();
                    return Err(Error::Stopped);
                }
            }
        }
    }
}

/// The subscription of a member with these settings, once they are found complete.
fn checked_subscription(group: &GroupConfig) -> Result<TopicSubscription, Error> {
    if group.group_id.is_empty() {
        return Err(Error::InvalidArgument {
            what: "group.id",
            detail: "a group member needs a group.id".to_owned(),
        });
    }
    let subscription = TopicSubscription::parse(&group.topics)?;
    if subscription.is_empty() {
        return Err(Error::InvalidArgument {
            what: "topics",
            detail: "a group member needs at least one topic".to_owned(),
        });
    }
    if group.protocol == GroupProtocol::Classic && group.assignors.is_empty() {
        return Err(Error::InvalidArgument {
            what: "assignor",
            detail: "the classic protocol needs at least one assignor".to_owned(),
        });
    }
    Ok(subscription)
}

/// `topic/0,topic/1` (logged on every assignment change; the broker tests read it).
fn render(partitions: &[TopicPartition]) -> String {
    let parts: Vec<String> = partitions.iter().map(ToString::to_string).collect();
    parts.join(",")
}

impl Drop for GroupConsumer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
