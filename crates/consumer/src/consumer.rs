//! [`Consumer`]: a consumer of assigned partitions, and [`Fetched`], what its poll returns.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::{mpsc, Mutex as AsyncMutex};

use crate::config::{ConsumerConfig, StartOffset};
use crate::cursor::{Cursor, CursorState};
use crate::metrics::MetricsSnapshot;
use crate::position::{positions, MetricsSource, PartitionPosition};
use crate::shared::{Event, Shared};
use crate::subscription::TopicSubscription;
use crate::{coordinator, refresh, Error, PartitionChunk, TopicPartition};
use krec_client::metadata::MetadataClient;
use krec_client::Error as ClientError;

/// Metadata answers in a row that must miss a topic before [`Consumer::partitions`] calls it
/// unknown.
pub(crate) const UNKNOWN_TOPIC_LOOKUPS: u32 = 5;

/// The pause between those answers: together about a second, which covers a topic created
/// just before the consumer started.
pub(crate) const UNKNOWN_TOPIC_RETRY_DELAY: std::time::Duration =
    std::time::Duration::from_millis(250);

/// What [`Consumer::poll`] returns.
#[derive(Debug)]
#[non_exhaustive]
pub enum Fetched {
    /// Fetched record batches of one partition.
    Chunk(PartitionChunk),
    /// A partition reached its end offset (high watermark, or last stable offset when reading
    /// committed data) as observed by the fetch that got there. Read from a follower, the end
    /// is never below what the leader last reported: a follower's lagging one only raises it.
    EndOfPartition {
        /// The partition.
        topic_partition: TopicPartition,
        /// The end offset.
        offset: i64,
    },
    /// The topics a [`Consumer::subscribe`] pattern matches changed: the partitions of
    /// `added` topics are consumed from now on, those of `dropped` (deleted) topics no longer.
    SubscriptionChanged {
        /// Topics newly matched.
        added: Vec<Arc<str>>,
        /// Topics gone from the cluster.
        dropped: Vec<Arc<str>>,
    },
}

/// An async Kafka consumer of assigned partitions (no consumer group).
///
/// Background tasks fetch from every leader with one request in flight per broker; fetched
/// data waits in a queue bounded by [`ConsumerConfig::buffer_bytes`] until [`Consumer::poll`]
/// hands it out. Dropping the consumer stops the tasks.
#[derive(Debug)]
pub struct Consumer {
    pub(crate) shared: Arc<Shared>,
    events: mpsc::UnboundedReceiver<Event>,
    metadata: Arc<AsyncMutex<MetadataClient>>,
    /// Set by the first fatal error: later polls fail at once instead of waiting forever.
    stopped: bool,
    /// Set by [`Consumer::subscribe`]: a consumer follows one subscription.
    subscribed: bool,
    /// With [`Consumer::stop_at_end`]: the partitions that have reached their end.
    ends: Option<EndWatch>,
    /// Set by [`Consumer::stop_fetching`]: [`Consumer::next_chunk`] ends instead of failing.
    fetching_stopped: bool,
}

impl Consumer {
    /// Connects to the first bootstrap broker that answers and starts the background tasks.
    /// Must be called inside a tokio runtime.
    pub async fn connect(config: ConsumerConfig) -> Result<Self, Error> {
        config.check_bootstrap()?;
        let mut metadata = MetadataClient::new(config.bootstrap.clone(), config.connection.clone());
        metadata.fetch(&[]).await?;
        let metadata = Arc::new(AsyncMutex::new(metadata));
        let (sender, events) = mpsc::unbounded_channel();
        let shared = Shared::new(config, sender);
        let task = tokio::spawn(coordinator::run(shared.clone(), metadata.clone()));
        shared.track(task);
        Ok(Self {
            shared,
            events,
            metadata,
            stopped: false,
            subscribed: false,
            ends: None,
            fetching_stopped: false,
        })
    }

    /// The settings the consumer runs with.
    pub fn config(&self) -> &ConsumerConfig {
        &self.shared.config
    }

    /// The partition ids of `topic`, or [`ClientError::UnknownTopic`].
    ///
    /// A topic created a moment ago may not have reached the answering broker's metadata yet
    /// (KRaft brokers learn of it asynchronously), so "unknown" is believed only after
    /// `UNKNOWN_TOPIC_LOOKUPS` answers in a row, `UNKNOWN_TOPIC_RETRY_DELAY` apart.
    pub async fn partitions(&self, topic: &str) -> Result<Vec<i32>, Error> {
        let mut lookups = 0;
        loop {
            lookups += 1;
            let metadata = self
                .metadata
                .lock()
                .await
                .fetch(&[topic.to_owned()])
                .await?;
            match metadata.topic(topic) {
                Ok(found) => return Ok(found.partitions.iter().map(|p| p.partition).collect()),
                Err(ClientError::UnknownTopic { .. }) if lookups < UNKNOWN_TOPIC_LOOKUPS => {
                    tracing::debug!(topic, lookups, "topic not in metadata yet; asking again");
                    tokio::time::sleep(UNKNOWN_TOPIC_RETRY_DELAY).await;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Consumes every partition of the topics `subscription` takes, each starting at `start`,
    /// and keeps following it: every [`ConsumerConfig::metadata_refresh`] the cluster's topics
    /// are looked at again; partitions of newly matched topics (and new partitions) start at
    /// `start`, and a deleted topic that a pattern matched is dropped, with one log line and a
    /// [`Fetched::SubscriptionChanged`]. A named topic must exist, as for
    /// [`Consumer::partitions`]; a pattern may match nothing yet.
    ///
    /// A consumer follows one subscription; a second call is [`Error::InvalidArgument`].
    pub async fn subscribe(
        &mut self,
        subscription: TopicSubscription,
        start: StartOffset,
    ) -> Result<(), Error> {
        if self.subscribed {
            return Err(Error::InvalidArgument {
                what: "subscription",
                detail: "the consumer already follows a subscription".to_owned(),
            });
        }
        let mut named = refresh::Matched::new();
        for name in subscription.names() {
            named.insert(name.clone(), self.partitions(name).await?);
        }
        let mut matched =
            refresh::look_up(&self.metadata, &subscription, &refresh::Matched::new()).await?;
        for (name, partitions) in named {
            matched.entry(name).or_insert(partitions);
        }
        if subscription.has_patterns() && matched.keys().all(|t| subscription.is_named(t)) {
            tracing::warn!(patterns = ?subscription.patterns().collect::<Vec<_>>(),
                "no topic matches the subscription's patterns yet");
        }
        let mut follower = refresh::Follower {
            subscription,
            start,
            current: refresh::Matched::new(),
        };
        follower.apply(&self.shared, matched);
        self.subscribed = true;
        self.shared.coordinator_wakeup.notify_one();
        let task = tokio::spawn(refresh::run(
            self.shared.clone(),
            self.metadata.clone(),
            follower,
        ));
        self.shared.track(task);
        Ok(())
    }

    /// Reads every partition of `topic`, each from `start` (already assigned ones seek), and
    /// returns them. The topic must exist, as for [`Consumer::partitions`].
    pub async fn assign_topic(
        &mut self,
        topic: &str,
        start: StartOffset,
    ) -> Result<Vec<TopicPartition>, Error> {
        let topic: Arc<str> = Arc::from(topic);
        let partitions: Vec<TopicPartition> = self
            .partitions(&topic)
            .await?
            .into_iter()
            .map(|partition| TopicPartition::new(topic.clone(), partition))
            .collect();
        self.assign_unchecked(partitions.iter().map(|p| (p.clone(), start)));
        Ok(partitions)
    }

    /// Reads `partitions`, each from `start` (already assigned ones seek). Each must exist:
    /// the metadata is asked first, and a partition it does not list is
    /// [`Error::UnknownPartition`], with nothing assigned.
    pub async fn assign(
        &mut self,
        partitions: &[TopicPartition],
        start: StartOffset,
    ) -> Result<(), Error> {
        let starts: Vec<(TopicPartition, StartOffset)> =
            partitions.iter().map(|p| (p.clone(), start)).collect();
        self.assign_at(&starts).await
    }

    /// [`Consumer::assign`] with a start of each partition's own.
    pub async fn assign_at(
        &mut self,
        starts: &[(TopicPartition, StartOffset)],
    ) -> Result<(), Error> {
        let mut known: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (wanted, _) in starts {
            if !known.contains_key(&*wanted.topic) {
                known.insert(&wanted.topic, self.partitions(&wanted.topic).await?);
            }
            let existing = &known[&*wanted.topic];
            if !existing.contains(&wanted.partition) {
                return Err(Error::UnknownPartition {
                    topic: wanted.topic.to_string(),
                    partition: wanted.partition,
                    count: existing.len(),
                });
            }
        }
        self.assign_unchecked(starts.iter().cloned());
        Ok(())
    }

    /// Adds partitions, each with its own start, without asking the metadata first (a group
    /// coordinator's assignment names partitions that exist; one that does not fails when the
    /// leaders are looked up). Already assigned ones seek.
    pub(crate) fn assign_unchecked(
        &mut self,
        starts: impl IntoIterator<Item = (TopicPartition, StartOffset)>,
    ) {
        let generation = self.shared.next_generation();
        {
            let mut state = self.shared.state();
            for (key, start) in starts {
                if let Some(ends) = self.ends.as_mut() {
                    ends.forget(&key);
                }
                let cursor_key = (key.topic.clone(), key.partition);
                match state.cursors.get_mut(&cursor_key) {
                    Some(cursor) => seek_cursor(cursor, start),
                    None => {
                        let mut cursor = Cursor::new(key.topic, key.partition, start);
                        cursor.generation = generation;
                        state.cursors.insert(cursor_key, cursor);
                    }
                }
            }
            state.metadata_stale = true;
        }
        self.shared.coordinator_wakeup.notify_one();
        self.shared.fetch_wakeup.notify_waiters();
    }

    /// Stops reading `partitions`: nothing fetched for them is handed out after this returns
    /// (data already in flight is dropped when it arrives).
    pub fn unassign(&mut self, partitions: &[TopicPartition]) {
        let mut state = self.shared.state();
        for key in partitions {
            state.cursors.remove(&(key.topic.clone(), key.partition));
            if let Some(ends) = self.ends.as_mut() {
                ends.forget(key);
            }
        }
    }

    /// Moves an assigned partition to `start`; data fetched for the old position is dropped.
    pub fn seek(&mut self, partition: &TopicPartition, start: StartOffset) -> Result<(), Error> {
        {
            let mut state = self.shared.state();
            let key = (partition.topic.clone(), partition.partition);
            let cursor = state
                .cursors
                .get_mut(&key)
                .ok_or_else(|| Error::InvalidArgument {
                    what: "partition",
                    detail: format!("{partition} is not assigned"),
                })?;
            seek_cursor(cursor, start);
        }
        if let Some(ends) = self.ends.as_mut() {
            ends.forget(partition);
        }
        self.shared.coordinator_wakeup.notify_one();
        self.shared.fetch_wakeup.notify_waiters();
        Ok(())
    }

    /// Once on, [`Consumer::next_chunk`] gives `None` when every partition read now has
    /// reached the end it had when the fetch that got there was answered. Each partition
    /// counts once (a partition assigned or sought again must reach its end again); the
    /// partitions of topics a subscription adds count from when they are added, and those of
    /// dropped topics no longer count.
    pub fn stop_at_end(&mut self, stop: bool) {
        self.ends = stop.then(|| EndWatch::new(false));
    }

    /// [`Consumer::stop_at_end`] for a group member: a partition that fetches more after its
    /// end must reach it again, and nothing assigned is not the end.
    pub(crate) fn stop_at_end_as_member(&mut self, stop: bool) {
        self.ends = stop.then(|| EndWatch::new(true));
    }

    /// The next chunk of records, in fetch order per partition; `None` once every partition
    /// is at its end under [`Consumer::stop_at_end`], or after [`Consumer::stop_fetching`]
    /// when everything fetched before has been handed out. Errors are final. Cancel-safe.
    pub async fn next_chunk(&mut self) -> Result<Option<PartitionChunk>, Error> {
        loop {
            if self.all_at_end() {
                return Ok(None);
            }
            let fetched = if self.fetching_stopped {
                match self.poll_fetched()? {
                    Some(fetched) => fetched,
                    None => return Ok(None),
                }
            } else {
                self.poll().await?
            };
            if let Fetched::Chunk(chunk) = fetched {
                return Ok(Some(chunk));
            }
        }
    }

    /// Under [`Consumer::stop_at_end`]: every partition read now is at its end. Looks at the
    /// partitions only when an end was reached or the partitions changed since the last look.
    pub(crate) fn all_at_end(&mut self) -> bool {
        let Some(ends) = self.ends.as_mut() else {
            return false;
        };
        if std::mem::take(&mut ends.changed) {
            let state = self.shared.state();
            ends.at_end = ends.covers(state.cursors.keys());
        }
        ends.at_end
    }

    /// [`Consumer::next_chunk`] as a [`Stream`](futures_core::Stream) of chunks, for code that
    /// composes streams. The stream ends where `next_chunk` gives `None`, and after an error.
    pub fn into_stream(self) -> impl futures_core::Stream<Item = Result<PartitionChunk, Error>> {
        futures_util::stream::unfold(Some(self), |consumer| async move {
            let mut consumer = consumer?;
            match consumer.next_chunk().await {
                Ok(Some(chunk)) => Some((Ok(chunk), Some(consumer))),
                Ok(None) => None,
                Err(error) => Some((Err(error), None)),
            }
        })
    }

    /// The next chunk or end-of-partition notice, in fetch order per partition.
    ///
    /// Errors are final: after one, the consumer has stopped fetching.
    pub async fn poll(&mut self) -> Result<Fetched, Error> {
        if self.stopped {
            return Err(Error::Stopped);
        }
        loop {
            let event = self.events.recv().await.ok_or(Error::Stopped)?;
            if let Some(fetched) = self.accept(event)? {
                return Ok(fetched);
            }
        }
    }

    /// What an event means to the caller: nothing (data of a partition given up or sought
    /// since), something to hand out, or the consumer's end.
    fn accept(&mut self, event: Event) -> Result<Option<Fetched>, Error> {
        let fetched = self.current(event)?;
        if let (Some(ends), Some(fetched)) = (self.ends.as_mut(), &fetched) {
            ends.note(fetched);
        }
        Ok(fetched)
    }

    /// [`Consumer::accept`] before `-e`'s bookkeeping.
    fn current(&mut self, event: Event) -> Result<Option<Fetched>, Error> {
        Ok(match event {
            Event::Chunk(chunk) => self
                .is_current(chunk.topic_arc(), chunk.partition(), chunk.generation())
                .then_some(Fetched::Chunk(chunk)),
            Event::EndOfPartition {
                topic,
                partition,
                offset,
                generation,
            } => self
                .is_current(&topic, partition, generation)
                .then(|| Fetched::EndOfPartition {
                    topic_partition: TopicPartition::new(topic, partition),
                    offset,
                }),
            Event::SubscriptionChanged { added, dropped } => {
                Some(Fetched::SubscriptionChanged { added, dropped })
            }
            Event::Failed(error) => {
                self.stopped = true;
                self.shared.stop();
                return Err(error);
            }
        })
    }

    /// After [`Consumer::stop_fetching`]: what was fetched before, without waiting for more.
    pub(crate) fn poll_fetched(&mut self) -> Result<Option<Fetched>, Error> {
        while let Ok(event) = self.events.try_recv() {
            if let Some(fetched) = self.accept(event)? {
                return Ok(Some(fetched));
            }
        }
        Ok(None)
    }

    /// How many partitions are assigned (cheaper than [`Consumer::positions`]).
    pub fn assigned_count(&self) -> usize {
        self.shared.state().cursors.len()
    }

    /// Where every assigned partition stands.
    pub fn positions(&self) -> Vec<PartitionPosition> {
        positions(&self.shared)
    }

    /// The consumer's counters and positions now.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics_source().snapshot()
    }

    /// A handle that takes [`Consumer::metrics`] snapshots from another task or thread.
    pub fn metrics_source(&self) -> MetricsSource {
        MetricsSource {
            shared: self.shared.clone(),
        }
    }

    /// Stops fetching without waiting: each broker's fetch loop ends its fetch session in
    /// the background ([`Consumer::close`] waits for that). Events already fetched can still
    /// be polled.
    pub fn stop_fetching(&mut self) {
        self.fetching_stopped = true;
        self.shared.begin_close();
    }

    /// Stops fetching and ends each broker's fetch session (KIP-227), waiting for that at
    /// most [`ConsumerConfig::close_timeout`]; then stops every background task, as
    /// dropping the consumer does (which ends no session: the brokers evict it later).
    pub async fn close(self) {
        let limit = self.shared.config.close_timeout;
        self.shared.close_fetch_loops(limit).await;
    }

    fn is_current(&self, topic: &Arc<str>, partition: i32, generation: u64) -> bool {
        self.shared.is_current(topic, partition, generation)
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

/// [`Consumer::stop_at_end`]'s bookkeeping: which partitions are at their end.
#[derive(Debug)]
struct EndWatch {
    reached: BTreeSet<TopicPartition>,
    /// A group member's: a partition that fetches more after its end must reach it again,
    /// and nothing assigned is not the end.
    member: bool,
    /// An end was reached or the partitions changed since the last look.
    changed: bool,
    /// What the last look found.
    at_end: bool,
}

impl EndWatch {
    fn new(member: bool) -> Self {
        Self {
            reached: BTreeSet::new(),
            member,
            changed: true,
            at_end: false,
        }
    }

    fn note(&mut self, fetched: &Fetched) {
        match fetched {
            Fetched::Chunk(chunk) if self.member && !self.reached.is_empty() => {
                let key = TopicPartition::new(chunk.topic_arc().clone(), chunk.partition());
                if self.reached.remove(&key) {
                    self.at_end = false;
                }
            }
            Fetched::EndOfPartition {
                topic_partition,
                offset,
            } => {
                tracing::debug!(%topic_partition, offset, "reached the end of the partition");
                self.reached.insert(topic_partition.clone());
                self.changed = true;
            }
            // Added topics have partitions to read; dropped ones no longer count.
            Fetched::SubscriptionChanged { .. } => self.changed = true,
            Fetched::Chunk(_) => {}
        }
    }

    /// The partition was assigned, sought or given up: it must reach its end (again).
    fn forget(&mut self, key: &TopicPartition) {
        self.reached.remove(key);
        self.changed = true;
    }

    /// Every one of `partitions` is at its end. Fewer ends than partitions cannot cover them,
    /// so the partitions are looked at one by one only once enough have reached their end.
    fn covers<'p>(&self, partitions: impl ExactSizeIterator<Item = &'p (Arc<str>, i32)>) -> bool {
        if partitions.len() == 0 {
            return !self.member;
        }
        if self.reached.len() < partitions.len() {
            return false;
        }
        let mut partitions = partitions;
        partitions.all(|(topic, partition)| {
            self.reached
                .contains(&TopicPartition::new(topic.clone(), *partition))
        })
    }
}

fn seek_cursor(cursor: &mut Cursor, start: StartOffset) {
    cursor.generation += 1;
    cursor.at_end = false;
    cursor.stalled_fetches = 0;
    match start {
        StartOffset::Offset(offset) => {
            cursor.offset = offset;
            cursor.state = if cursor.leader.is_some() {
                CursorState::Ready
            } else {
                CursorState::NeedsLeader
            };
        }
        other => cursor.state = CursorState::NeedsOffset(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[(&str, i32)]) -> Vec<(Arc<str>, i32)> {
        list.iter().map(|&(t, p)| (Arc::from(t), p)).collect()
    }

    fn chunk_of(topic: &str, partition: i32) -> PartitionChunk {
        let data = crate::cursor::ChunkData {
            fetch_offset: 0,
            next_offset: 1,
            high_watermark: 1,
            last_stable_offset: 1,
            aborted: Vec::new(),
            records: bytes::Bytes::new(),
        };
        PartitionChunk::new(Arc::from(topic), partition, 0, data, false, None)
    }

    fn end(topic: &str, partition: i32) -> Fetched {
        Fetched::EndOfPartition {
            topic_partition: TopicPartition::new(topic, partition),
            offset: 0,
        }
    }

    #[test]
    fn a_group_member_is_at_the_end_when_every_assigned_partition_is() {
        let mut ends = EndWatch::new(true);
        assert!(!ends.covers(keys(&[]).iter()), "nothing assigned yet");
        ends.note(&end("a", 0));
        ends.note(&end("b", 1));
        assert!(!ends.covers(keys(&[("a", 0), ("a", 1)]).iter()));
        // More came for a/0 after its end: it must reach the end again.
        let chunk = chunk_of("a", 0);
        ends.note(&Fetched::Chunk(chunk));
        ends.note(&end("a", 1));
        assert!(!ends.covers(keys(&[("a", 0), ("a", 1)]).iter()));
        ends.note(&end("a", 0));
        assert!(ends.covers(keys(&[("a", 0), ("a", 1)]).iter()));
        // b/1 was revoked: it no longer counts towards a later, larger assignment.
        ends.forget(&TopicPartition::new("b", 1));
        let larger = keys(&[("a", 0), ("a", 1), ("c", 0)]);
        assert!(!ends.covers(larger.iter()));
        ends.note(&end("c", 0));
        assert!(ends.covers(larger.iter()));
    }

    #[test]
    fn alone_each_partition_counts_once_and_nothing_to_read_is_the_end() {
        let mut ends = EndWatch::new(false);
        assert!(ends.covers(keys(&[]).iter()), "nothing to read");
        ends.note(&end("a", 0));
        let chunk = chunk_of("a", 0);
        ends.note(&Fetched::Chunk(chunk));
        assert!(ends.covers(keys(&[("a", 0)]).iter()), "reached once");
        // A topic a pattern adds counts from when it is added.
        assert!(!ends.covers(keys(&[("a", 0), ("n", 0)]).iter()));
    }
}
