//! krec-consumer: the embeddable async Kafka consumer.
//!
//! It reads partitions through `krec-client` and hands out their record batches as borrowed
//! views (`krec-batch`): no copy of record bytes, no output formats, no argument parsing.
//!
//! Layout, from the bottom up:
//! - [`config`]: settings, start offsets, reset policy, and client properties onto them.
//! - [`subscription`]: topic names and patterns, matched against the cluster's topics.
//! - [`cursor`]: per-partition positions and what one fetch response does to them.
//! - [`chunk`]: fetched data and its decoding (aborted transactions hidden, borrowed records).
//! - `coordinator`: Metadata and ListOffsets lookups; starts one fetch loop per node fetched
//!   from (leaders, and followers named as preferred read replicas, KIP-392).
//! - `fetch_loop`: one fetch in flight per broker, the next sent before decoding.
//! - `refresh`: follows a subscription, moving the cursors to the topics it matches now.
//! - [`metrics`]: counters the tasks keep (fetches, latencies, bytes, errors, group events)
//!   and their plain snapshot, [`MetricsSnapshot`].
//! - [`workers`]: decode threads with per-partition ordering, for programs that print.
//! - [`group`]: consumer groups (classic protocol and KIP-848) over the same fetch pipeline,
//!   committing only what has been written out.
//! - [`partitioner`]: the partition a producer sent a key to (Java's murmur2, librdkafka's CRC32).
//! - [`error`]: the crate's one error enum; the client's errors wrap into it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), krec_consumer::Error> {
//! use krec_consumer::{Consumer, ConsumerConfig, Fetched, StartOffset};
//! let config = ConsumerConfig::new(vec!["127.0.0.1:9092".into()]);
//! let mut consumer = Consumer::connect(config.clone()).await?;
//! let partitions = consumer.partitions("events").await?;
//! consumer.assign("events", &partitions, StartOffset::Beginning).await?;
//! loop {
//!     if let Fetched::Chunk(chunk) = consumer.poll().await? {
//!         for batch in chunk.batches(&config.decode) {
//!             for record in batch?.records() {
//!                 let record = record?;
//!                 println!("{} {:?}", record.offset(), record.value());
//!             }
//!         }
//!     }
//! }
//! # }
//! ```
//!
//! Its configuration takes the forms a command line gives, checked before anything connects:
//!
//! ```
//! use krec_consumer::{ConsumerConfig, OffsetReset, StartOffset};
//!
//! let brokers = ConsumerConfig::parse_bootstrap("127.0.0.1:9092, 127.0.0.1:9093").unwrap();
//! let mut config = ConsumerConfig::new(brokers);
//! config.offset_reset = "earliest".parse::<OffsetReset>().unwrap();
//! assert_eq!("-100".parse::<StartOffset>().unwrap(), StartOffset::FromEnd(100));
//! assert_eq!("@1700000000000".parse::<StartOffset>().unwrap(), StartOffset::Timestamp(1700000000000));
//! assert!(ConsumerConfig::parse_bootstrap("no-port").is_err());
//! ```
//!
//! Or load the `client.properties` operators already have (librdkafka's names or the Java
//! client's; `${env:NAME}` and `${file:PATH}` keep secrets out of the file), and add what the
//! program decides. Errors name the key and where it was set (`FILE:LINE`); keys for the Schema
//! Registry are kept for the program ([`ConsumerConfig::foreign_properties`]), and the group
//! settings fill [`ConsumerConfig::group`]. See [`ConsumerConfig::apply_properties`] for the keys.
//!
//! ```no_run
//! # fn demo() -> Result<(), krec_consumer::Error> {
//! use krec_consumer::ConsumerConfig;
//! let config = ConsumerConfig::from_file("client.properties")?
//!     .with("bootstrap.servers", "127.0.0.1:9092")?
//!     .with("group.id", "billing")?;
//! assert_eq!(config.group.group_id, "billing");
//! # Ok(())
//! # }
//! ```
//!
//! `examples/consume.rs` and `examples/group.rs` run against a broker (each starts with its
//! `cargo run` line).
//!
//! How this crate fits into krec (the crates, the hot path, the invariants):
//! `docs/ARCHITECTURE.md` in the repository.
#![deny(missing_docs)]

pub mod chunk;
pub mod config;
mod coordinator;
pub mod cursor;
pub mod error;
mod fetch_loop;
pub mod group;
pub mod metrics;
pub mod partitioner;
mod refresh;
mod shared;
pub mod subscription;
pub mod workers;

use std::sync::Arc;

use tokio::sync::{mpsc, Mutex as AsyncMutex};

pub use chunk::{ChunkBatch, ChunkBatchRef, ChunkBatches, ChunkRecords, PartitionChunk};
pub use config::{ConsumerConfig, OffsetReset, Property, StartOffset};
pub use error::Error;
pub use group::{GroupConfig, GroupConsumer};
pub use metrics::MetricsSnapshot;
pub use subscription::TopicSubscription;

use cursor::{Cursor, CursorState};
use krec_client::metadata::MetadataClient;
use krec_client::Error as ClientError;
use shared::{Event, Shared};

/// Metadata answers in a row that must miss a topic before [`Consumer::partitions`] calls it
/// unknown.
pub const UNKNOWN_TOPIC_LOOKUPS: u32 = 5;

/// The pause between those answers: together about a second, which covers a topic created
/// just before the consumer started.
pub const UNKNOWN_TOPIC_RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(250);

/// What [`Consumer::poll`] returns.
#[derive(Debug)]
pub enum Fetched {
    /// Fetched record batches of one partition.
    Chunk(PartitionChunk),
    /// A partition reached its end offset (high watermark, or last stable offset when reading
    /// committed data) as observed by the fetch that got there. Read from a follower, the end
    /// is never below what the leader last reported: a follower's lagging one only raises it.
    EndOfPartition {
        /// Topic name.
        topic: Arc<str>,
        /// Partition id.
        partition: i32,
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

/// Where one assigned partition stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionPosition {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition id.
    pub partition: i32,
    /// Next offset to fetch (none while the start offset is being looked up).
    pub offset: Option<i64>,
    /// Last high watermark seen (none before the first fetch).
    pub high_watermark: Option<i64>,
    /// Last stable offset seen (none before the first fetch, or when the broker sent none).
    pub last_stable_offset: Option<i64>,
}

impl PartitionPosition {
    /// Records between the position and the end the consumer reads to (0 when unknown).
    pub fn lag(&self, read_committed: bool) -> i64 {
        let end = match self.last_stable_offset {
            Some(stable) if read_committed => Some(stable),
            _ => self.high_watermark,
        };
        match (end, self.offset) {
            (Some(end), Some(offset)) => (end - offset).max(0),
            _ => 0,
        }
    }
}

/// An async Kafka consumer of assigned partitions (no consumer group).
///
/// Background tasks fetch from every leader with one request in flight per broker; fetched
/// data waits in a queue bounded by [`ConsumerConfig::buffer_bytes`] until [`Consumer::poll`]
/// hands it out. Dropping the consumer stops the tasks.
#[derive(Debug)]
pub struct Consumer {
    shared: Arc<Shared>,
    events: mpsc::UnboundedReceiver<Event>,
    metadata: Arc<AsyncMutex<MetadataClient>>,
    /// Set by the first fatal error: later polls fail at once instead of waiting forever.
    stopped: bool,
    /// Set by [`Consumer::subscribe`]: a consumer follows one subscription.
    subscribed: bool,
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
    /// [`UNKNOWN_TOPIC_LOOKUPS`] answers in a row, [`UNKNOWN_TOPIC_RETRY_DELAY`] apart.
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

    /// Adds partitions of `topic`, each starting at `start` (already assigned ones seek).
    pub async fn assign(
        &mut self,
        topic: &str,
        partitions: &[i32],
        start: StartOffset,
    ) -> Result<(), Error> {
        let existing = self.partitions(topic).await?;
        if let Some(missing) = partitions.iter().find(|p| !existing.contains(p)) {
            return Err(Error::UnknownPartition {
                topic: topic.to_owned(),
                partition: *missing,
                count: existing.len(),
            });
        }
        let topic: Arc<str> = Arc::from(topic);
        {
            let mut state = self.shared.state();
            for &partition in partitions {
                let key = (topic.clone(), partition);
                match state.cursors.get_mut(&key) {
                    Some(cursor) => seek_cursor(cursor, start),
                    None => {
                        state
                            .cursors
                            .insert(key, Cursor::new(topic.clone(), partition, start));
                    }
                }
            }
            state.metadata_stale = true;
        }
        self.shared.coordinator_wakeup.notify_one();
        Ok(())
    }

    /// Adds partitions, each with its own start, without checking them against the metadata
    /// first (a group coordinator's assignment names partitions that exist; one that does not
    /// fails when the leaders are looked up). Already assigned ones seek.
    pub fn assign_at(&mut self, starts: &[(String, i32, StartOffset)]) {
        let generation = self.shared.next_generation();
        {
            let mut state = self.shared.state();
            for (topic, partition, start) in starts {
                let topic: Arc<str> = Arc::from(topic.as_str());
                let key = (topic.clone(), *partition);
                match state.cursors.get_mut(&key) {
                    Some(cursor) => seek_cursor(cursor, *start),
                    None => {
                        let mut cursor = Cursor::new(topic, *partition, *start);
                        cursor.generation = generation;
                        state.cursors.insert(key, cursor);
                    }
                }
            }
            state.metadata_stale = true;
        }
        self.shared.coordinator_wakeup.notify_one();
        self.shared.fetch_wakeup.notify_waiters();
    }

    /// Removes partitions: nothing fetched for them is handed out after this returns (data
    /// already in flight is dropped when it arrives).
    pub fn unassign(&mut self, partitions: &[(String, i32)]) {
        let mut state = self.shared.state();
        for (topic, partition) in partitions {
            let key = (Arc::<str>::from(topic.as_str()), *partition);
            state.cursors.remove(&key);
        }
    }

    /// Moves an assigned partition to `start`; data fetched for the old position is dropped.
    pub fn seek(&mut self, topic: &str, partition: i32, start: StartOffset) -> Result<(), Error> {
        {
            let mut state = self.shared.state();
            let cursor = state
                .cursors
                .iter_mut()
                .find(|((t, p), _)| &**t == topic && *p == partition)
                .map(|(_, cursor)| cursor)
                .ok_or_else(|| Error::InvalidArgument {
                    what: "partition",
                    detail: format!("{topic}/{partition} is not assigned"),
                })?;
            seek_cursor(cursor, start);
        }
        self.shared.coordinator_wakeup.notify_one();
        self.shared.fetch_wakeup.notify_waiters();
        Ok(())
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
            match event {
                Event::Chunk(chunk) => {
                    if self.is_current(chunk.topic_arc(), chunk.partition(), chunk.generation()) {
                        return Ok(Fetched::Chunk(chunk));
                    }
                }
                Event::EndOfPartition {
                    topic,
                    partition,
                    offset,
                    generation,
                } => {
                    if self.is_current(&topic, partition, generation) {
                        return Ok(Fetched::EndOfPartition {
                            topic,
                            partition,
                            offset,
                        });
                    }
                }
                Event::SubscriptionChanged { added, dropped } => {
                    return Ok(Fetched::SubscriptionChanged { added, dropped });
                }
                Event::Failed(error) => {
                    self.stopped = true;
                    self.shared.stop();
                    return Err(error);
                }
            }
        }
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
        let state = self.shared.state();
        state
            .cursors
            .get(&(topic.clone(), partition))
            .is_some_and(|cursor| cursor.generation == generation)
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

fn positions(shared: &Shared) -> Vec<PartitionPosition> {
    let state = shared.state();
    state
        .cursors
        .values()
        .map(|c| PartitionPosition {
            topic: c.topic.clone(),
            partition: c.partition,
            offset: match c.state {
                CursorState::NeedsOffset(_) => None,
                _ => Some(c.offset),
            },
            // The wire's -1 means unknown.
            high_watermark: Some(c.high_watermark).filter(|&o| o >= 0),
            last_stable_offset: Some(c.last_stable_offset).filter(|&o| o >= 0),
        })
        .collect()
}

/// Takes [`MetricsSnapshot`]s of one consumer (or group member) from any task or thread, for
/// as long as it is kept (after the consumer is dropped, the last counts).
#[derive(Clone, Debug)]
pub struct MetricsSource {
    shared: Arc<Shared>,
}

impl MetricsSource {
    /// The counters and positions now.
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.shared.metrics.snapshot(positions(&self.shared))
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
    use super::PartitionPosition;
    use std::sync::Arc;

    fn position(
        offset: Option<i64>,
        high_watermark: Option<i64>,
        last_stable_offset: Option<i64>,
    ) -> PartitionPosition {
        PartitionPosition {
            topic: Arc::from("t"),
            partition: 0,
            offset,
            high_watermark,
            last_stable_offset,
        }
    }

    #[test]
    fn lag_counts_to_the_end_the_consumer_reads_to() {
        assert_eq!(position(Some(10), Some(50), Some(40)).lag(false), 40);
        assert_eq!(position(Some(10), Some(50), Some(40)).lag(true), 30);
        // Reading committed data with no stable offset known yet: the high watermark.
        assert_eq!(position(Some(10), Some(50), None).lag(true), 40);
        // Unknown positions or ends report no lag rather than a made-up one.
        assert_eq!(position(None, Some(50), Some(40)).lag(false), 0);
        assert_eq!(position(Some(10), None, None).lag(true), 0);
        assert_eq!(position(Some(60), Some(50), Some(50)).lag(false), 0);
    }
}
