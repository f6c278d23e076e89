//! Share groups (KIP-932): many members read the same partitions, the leader hands each one
//! ranges of records under a time lock, and each record is acknowledged on its own: accepted,
//! released (delivered again at once) or rejected. Nothing is committed.
//!
//! ```no_run
//! # async fn demo() -> Result<(), krec_consumer::Error> {
//! use krec_consumer::{AcknowledgeType, ConsumerConfig, ShareConsumer};
//!
//! let config = ConsumerConfig::from_file("client.properties")?
//!     .with("bootstrap.servers", "127.0.0.1:9092")?
//!     .with("group.id", "workers")?;
//! let mut share = ShareConsumer::subscribe(config, &["jobs"]).await?;
//! while let Some(chunk) = share.next_chunk().await? {
//!     chunk.for_each_record(|record| {
//!         if record.value().is_none() {
//!             share.ack_record(&chunk, record.offset(), AcknowledgeType::Reject);
//!         }
//!     })?;
//!     println!("delivery {} of {}/{}", chunk.delivery_count(), chunk.topic(), chunk.partition());
//!     share.ack(&chunk, AcknowledgeType::Accept); // the records not acknowledged one by one
//! }
//! share.close().await?; // releases what was not acknowledged, then leaves
//! # Ok(())
//! # }
//! ```
//!
//! Chunks hold their bytes' share of the buffer budget ([`ConsumerConfig::buffer_bytes`], as every
//! consumer's chunks do) until dropped; a ShareFetch goes out only once there is room for what it
//! may bring, so a member whose output falls behind stops acquiring records and leaves them to
//! the other members. Acknowledgements queued while it waits go out at once.
//!
//! Acknowledgements are kept as ranges and go out with the next ShareFetch to the partition's
//! leader, or in a ShareAcknowledge ([`ShareConsumer::send_acks`], [`ShareConsumer::close`]).
//! When a share session dies (a broken connection, a session error), the leader releases what
//! it had acquired for the member: acknowledgements still waiting for those records are
//! dropped, not sent again, since a later acquisition of the same offsets is a new delivery
//! that the member has not processed. The records come back with a higher delivery count.

mod acks;
mod chunk;
mod leader;
mod membership;
mod round;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use krec_batch::DecodeConfig;
pub use krec_client::share::AcknowledgeType;
use krec_client::share::{AcknowledgementRange, ShareFetchParams};
use tokio::sync::watch;

use crate::{ConsumerConfig, Error};
use acks::AckBook;
pub use chunk::ShareChunk;
use leader::LeaderSession;
use membership::{MemberState, Membership};

/// Records a ShareFetch asks the leader to acquire at most.
pub const DEFAULT_MAX_RECORDS: i32 = 5000;

/// Counters of a share consumer, readable from any thread.
#[derive(Debug, Default)]
pub struct ShareCounters {
    accepted: AtomicU64,
    released: AtomicU64,
    rejected: AtomicU64,
    in_flight: AtomicU64,
    acknowledge_errors: AtomicU64,
}

impl ShareCounters {
    /// Offsets acknowledged with `kind` so far (less those a leader refused).
    pub fn acknowledged(&self, kind: AcknowledgeType) -> u64 {
        self.counter(kind).load(Ordering::Relaxed)
    }

    /// Offsets acquired for this member and not acknowledged yet.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Acknowledgements a leader refused, per partition and request (their lock had run out,
    /// or their session ended): those records are delivered again.
    pub fn acknowledge_errors(&self) -> u64 {
        self.acknowledge_errors.load(Ordering::Relaxed)
    }

    /// One refusal of the acknowledgements `ranges`: their offsets no longer count as
    /// acknowledged.
    fn refuse<'r>(&self, ranges: impl IntoIterator<Item = &'r AcknowledgementRange>) {
        self.acknowledge_errors.fetch_add(1, Ordering::Relaxed);
        for range in ranges {
            let offsets = (range.last_offset - range.first_offset + 1).max(0) as u64;
            let counter = self.counter(range.kind);
            let less = |n: u64| Some(n.saturating_sub(offsets));
            let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, less);
        }
    }

    fn counter(&self, kind: AcknowledgeType) -> &AtomicU64 {
        match kind {
            AcknowledgeType::Accept => &self.accepted,
            AcknowledgeType::Release => &self.released,
            AcknowledgeType::Reject => &self.rejected,
        }
    }

    fn count(&self, kind: AcknowledgeType, offsets: u64) {
        self.counter(kind).fetch_add(offsets, Ordering::Relaxed);
    }
}

/// An acknowledgement queued by an [`Acknowledger`].
#[derive(Debug)]
struct QueuedAck {
    key: acks::PartitionKey,
    generation: u64,
    first: i64,
    last: i64,
    kind: AcknowledgeType,
}

/// Acknowledges chunks from any thread (a decode thread, once the records are written out):
/// the consumer takes what was queued at its next fetch, [`ShareConsumer::send_acks`] or
/// [`ShareConsumer::close`].
#[derive(Clone, Debug)]
pub struct Acknowledger {
    queue: tokio::sync::mpsc::UnboundedSender<QueuedAck>,
}

impl Acknowledger {
    /// Acknowledges every record of `chunk` not acknowledged yet as `kind`.
    pub fn ack(&self, chunk: &ShareChunk, kind: AcknowledgeType) {
        self.ack_offsets(chunk, chunk.first_offset(), chunk.last_offset(), kind);
    }

    /// Acknowledges `first..=last` of `chunk` (within its range) as `kind`.
    pub fn ack_offsets(&self, chunk: &ShareChunk, first: i64, last: i64, kind: AcknowledgeType) {
        let (first, last) = (
            first.max(chunk.first_offset()),
            last.min(chunk.last_offset()),
        );
        if first <= last {
            let _ = self.queue.send(QueuedAck {
                key: (chunk.topic_id(), chunk.partition()),
                generation: chunk.generation,
                first,
                last,
                kind,
            });
        }
    }
}

/// Makes [`ShareConsumer::next_chunk`] return `Ok(None)` after its current fetch, from any
/// task or thread; then [`ShareConsumer::close`].
#[derive(Clone, Debug)]
pub struct ShareStopper {
    stopping: Arc<AtomicBool>,
}

impl ShareStopper {
    /// Asks the consumer to stop fetching.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }
}

/// A member of a share group: [`ShareConsumer::next_chunk`] gives the records acquired for
/// it, and each is acknowledged with [`ShareConsumer::ack`] or [`ShareConsumer::ack_record`].
pub struct ShareConsumer {
    group: String,
    member_id: String,
    topics: Vec<String>,
    config: ConsumerConfig,
    decode: Arc<DecodeConfig>,
    params: ShareFetchParams,
    state: watch::Receiver<MemberState>,
    leave: watch::Sender<bool>,
    failure: Arc<Mutex<Option<Error>>>,
    heartbeat: Option<tokio::task::JoinHandle<()>>,
    metadata: krec_client::metadata::MetadataClient,
    leaders: Vec<LeaderSession>,
    /// Where each assigned partition is: `(key, topic name, leader node)`.
    placement: round::Placement,
    book: AckBook,
    ready: VecDeque<ShareChunk>,
    counters: Arc<ShareCounters>,
    backoff: crate::shared::Backoff,
    /// The consumer's usual counters (fetch requests and latency, errors, bytes), for
    /// [`ShareConsumer::metrics_source`].
    shared: Arc<crate::shared::Shared>,
    /// What [`Acknowledger`]s queued, taken before each fetch.
    queue: tokio::sync::mpsc::UnboundedSender<QueuedAck>,
    queued: tokio::sync::mpsc::UnboundedReceiver<QueuedAck>,
    stopping: Arc<AtomicBool>,
}

impl std::fmt::Debug for ShareConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareConsumer")
            .field("group", &self.group)
            .field("member_id", &self.member_id)
            .field("topics", &self.topics)
            .finish()
    }
}

impl ShareConsumer {
    /// Joins the share group `group.id` of `config` reading `topics` (names, not patterns).
    /// The group starts at the end of each partition unless its `share.auto.offset.reset`
    /// group config says `earliest`.
    pub async fn subscribe(mut config: ConsumerConfig, topics: &[&str]) -> Result<Self, Error> {
        // Reused response buffers are memory the budget does not count: at most half of it,
        // as for a consumer's fetch loops.
        let frames = &mut config.connection.frame_buffer_bytes;
        *frames = (*frames).min(config.buffer_bytes / 2);
        let group = config.group.group_id.clone();
        if group.is_empty() {
            return Err(Error::InvalidArgument {
                what: "group.id",
                detail: "a share group needs a group id".to_owned(),
            });
        }
        if topics.is_empty() {
            return Err(Error::InvalidArgument {
                what: "topics",
                detail: "a share group member needs at least one topic".to_owned(),
            });
        }
        let topics: Vec<String> = topics.iter().map(|t| (*t).to_owned()).collect();
        let mut metadata = krec_client::metadata::MetadataClient::new(
            config.bootstrap.clone(),
            config.connection.clone(),
        );
        // Unknown topics and unreachable brokers are reported here, before joining.
        let cluster = metadata.fetch(&topics).await?;
        for topic in &topics {
            cluster.topic(topic)?;
        }
        let member_id = membership::new_member_id();
        let (state_tx, state) = watch::channel(MemberState::default());
        let (leave, leave_rx) = watch::channel(false);
        let failure = Arc::new(Mutex::new(None));
        let membership = Membership {
            group: group.clone(),
            member_id: member_id.clone(),
            topics: topics.clone(),
            bootstrap: config.bootstrap.clone(),
            settings: config.connection.clone(),
            backoff: (config.backoff, config.max_backoff),
            give_up_after: config.give_up_after,
        };
        let heartbeat = tokio::spawn(membership.run(state_tx, leave_rx, failure.clone()));
        let params = ShareFetchParams {
            max_wait_ms: config.max_wait.as_millis().min(i32::MAX as u128) as i32,
            min_bytes: config.min_bytes,
            max_bytes: config.max_bytes,
            max_records: DEFAULT_MAX_RECORDS,
            batch_size: DEFAULT_MAX_RECORDS,
        };
        // Holds the usual counters; nothing reads its event channel.
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let shared = crate::shared::Shared::new(config.clone(), events);
        let (queue, queued) = tokio::sync::mpsc::unbounded_channel();
        Ok(Self {
            queue,
            queued,
            stopping: Arc::new(AtomicBool::new(false)),
            shared,
            group,
            member_id,
            topics,
            decode: Arc::new(config.decode.clone()),
            backoff: crate::shared::Backoff::new(config.backoff, config.max_backoff),
            config,
            params,
            state,
            leave,
            failure,
            heartbeat: Some(heartbeat),
            metadata,
            leaders: Vec::new(),
            placement: round::Placement::default(),
            book: AckBook::default(),
            ready: VecDeque::new(),
            counters: Arc::new(ShareCounters::default()),
        })
    }

    /// Records a ShareFetch asks to acquire at most ([`DEFAULT_MAX_RECORDS`] unless set).
    pub fn set_max_records(&mut self, records: i32) {
        self.params.max_records = records.max(1);
        self.params.batch_size = records.max(1);
    }

    /// A handle that acknowledges from any thread.
    pub fn acknowledger(&self) -> Acknowledger {
        Acknowledger {
            queue: self.queue.clone(),
        }
    }

    /// A handle that stops [`ShareConsumer::next_chunk`] from any task or thread.
    pub fn stopper(&self) -> ShareStopper {
        ShareStopper {
            stopping: self.stopping.clone(),
        }
    }

    /// Takes what the [`Acknowledger`]s queued.
    fn take_queued(&mut self) {
        while let Ok(ack) = self.queued.try_recv() {
            self.apply_queued(ack);
        }
        self.counters
            .in_flight
            .store(self.book.in_flight(), Ordering::Relaxed);
    }

    /// Before a fetch while records are held: waits (at most the fetch wait) for the first
    /// acknowledgement queued, so that the fetch carries it. A leader hands a partition's
    /// records to its members only up to a limit of records locked at once, and a fetch sent
    /// just before the acknowledgements would wait its whole time for nothing.
    async fn wait_for_queued(&mut self) {
        if self.book.in_flight() == 0 || !self.queued.is_empty() {
            return;
        }
        if let Ok(Some(ack)) = tokio::time::timeout(self.config.max_wait, self.queued.recv()).await
        {
            self.apply_queued(ack);
        }
    }

    fn apply_queued(&mut self, ack: QueuedAck) {
        {
            let QueuedAck {
                key,
                generation,
                first,
                last,
                kind,
            } = ack;
            let counted = self.book.acknowledge_in(key, generation, first, last, kind);
            self.counters.count(kind, counted);
        }
    }

    /// The member id this client made for itself.
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// The consumer's counters (acknowledgements by type, records in flight).
    pub fn counters(&self) -> Arc<ShareCounters> {
        self.counters.clone()
    }

    /// The usual consumer counters (fetch requests and latency, bytes, errors, whether it
    /// stopped on an error), readable from anywhere; no partition positions (a share group
    /// has none).
    pub fn metrics_source(&self) -> crate::MetricsSource {
        crate::MetricsSource {
            shared: self.shared.clone(),
        }
    }

    /// The next range of records acquired for this member. Waits for records; `Ok(None)`
    /// once a [`ShareStopper`] asked it to stop. Pending acknowledgements go out with the
    /// fetches this makes.
    pub async fn next_chunk(&mut self) -> Result<Option<ShareChunk>, Error> {
        loop {
            if let Some(chunk) = self.ready.pop_front() {
                return Ok(Some(chunk));
            }
            let fetched = match self.check_membership() {
                Ok(()) if self.stopping.load(Ordering::Relaxed) => return Ok(None),
                Ok(()) => self.fetch_round().await,
                Err(error) => Err(error),
            };
            if let Err(error) = fetched {
                self.shared.metrics.stopped_on_error();
                return Err(error);
            }
        }
    }

    /// Acknowledges every record of `chunk` not acknowledged yet as `kind`.
    pub fn ack(&mut self, chunk: &ShareChunk, kind: AcknowledgeType) {
        self.ack_range(chunk, chunk.first_offset(), chunk.last_offset(), kind);
    }

    /// Acknowledges the record at `offset` of `chunk` as `kind` (nothing if the chunk does not
    /// hold it, or it was acknowledged already).
    pub fn ack_record(&mut self, chunk: &ShareChunk, offset: i64, kind: AcknowledgeType) {
        if (chunk.first_offset()..=chunk.last_offset()).contains(&offset) {
            self.ack_range(chunk, offset, offset, kind);
        }
    }

    /// Acknowledges `first..=last` of `chunk` (within its range) as `kind`.
    pub fn ack_offsets(
        &mut self,
        chunk: &ShareChunk,
        first: i64,
        last: i64,
        kind: AcknowledgeType,
    ) {
        let (first, last) = (
            first.max(chunk.first_offset()),
            last.min(chunk.last_offset()),
        );
        if first <= last {
            self.ack_range(chunk, first, last, kind);
        }
    }

    fn ack_range(&mut self, chunk: &ShareChunk, first: i64, last: i64, kind: AcknowledgeType) {
        let key = (chunk.topic_id(), chunk.partition());
        let counted = self
            .book
            .acknowledge_in(key, chunk.generation, first, last, kind);
        self.counters.count(kind, counted);
        self.counters
            .in_flight
            .store(self.book.in_flight(), Ordering::Relaxed);
    }

    /// Sends the acknowledgements waiting for a fetch now, with ShareAcknowledge.
    pub async fn send_acks(&mut self) -> Result<(), Error> {
        self.take_queued();
        self.acknowledge_all(false).await
    }

    /// Releases every acquired record not acknowledged, delivers the acknowledgements and
    /// closes the share sessions, then leaves the group (heartbeat with epoch -1).
    pub async fn close(mut self) -> Result<(), Error> {
        self.take_queued();
        let released = self.book.acknowledge_all(AcknowledgeType::Release);
        self.counters.count(AcknowledgeType::Release, released);
        self.counters.in_flight.store(0, Ordering::Relaxed);
        let acknowledged = self.acknowledge_all(true).await;
        let _ = self.leave.send(true);
        if let Some(heartbeat) = self.heartbeat.take() {
            let _ = tokio::time::timeout(self.config.close_timeout, heartbeat).await;
        }
        acknowledged
    }

    /// The membership's failure, if it failed for good.
    fn check_membership(&self) -> Result<(), Error> {
        if !self.state.borrow().failed {
            return Ok(());
        }
        let error = self
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        Err(error.unwrap_or(Error::Stopped))
    }
}

impl Drop for ShareConsumer {
    fn drop(&mut self) {
        // Without close, the heartbeat task stops; the leaders release what it held when
        // its connections close.
        let _ = self.leave.send(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_acknowledgements_no_longer_count_as_acknowledged() {
        let counters = ShareCounters::default();
        counters.count(AcknowledgeType::Accept, 10);
        counters.count(AcknowledgeType::Reject, 2);
        let range = |first_offset, last_offset, kind| AcknowledgementRange {
            first_offset,
            last_offset,
            kind,
        };
        counters.refuse(&[
            range(0, 3, AcknowledgeType::Accept),
            range(4, 4, AcknowledgeType::Reject),
        ]);
        assert_eq!(counters.acknowledged(AcknowledgeType::Accept), 6);
        assert_eq!(counters.acknowledged(AcknowledgeType::Reject), 1);
        assert_eq!(counters.acknowledge_errors(), 1);
    }
}
